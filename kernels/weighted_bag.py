"""Weighted embedding bag: embedding_lookup_sparse's tail with weights (a weighted categorical
column's embedding, combiner sum or mean) in one pass.

Replaces SparseFillEmptyRows of the ids and of the weights -> Unique -> ResourceGather ->
GatherV2 -> Mul by the weights -> SegmentSum (-> DivNoNan by the SegmentSum of the weights) ->
Select(empty rows, 0): out[r] = sum(table[ids[i]] * weights[i]) over the entries i of row r in
input order (over the weights' sum too for the mean), empty rows zero. The same bits: each product
is rounded to the table's dtype first, as Mul does; SegmentSum copies a row of one entry and adds
the others from zero in TF's Eigen order (kernels/segment_sum.py: in turn below 16 entries, the
weights always: a column of one is no packet); DivNoNan gives 0 for a weight sum of 0.
``mode``: 0 sum, 1 mean. (Sqrtn squares the weights with Pow, whose rounding is the math library's:
not fused.)
"""
import numpy as np
from numba import njit

from .embedding_bag import rows_of_entries
from .reduce import EIGEN_UNROLL, sum_preserving_as_tf

SUM, MEAN = 0, 1


@njit(cache=True, nogil=True)
def weighted_bag(indices, values, weights, dense_shape, table, mode, err):
    out, counts, positions = rows_of_entries(indices, values, weights.shape[0], dense_shape, table, err)
    width = table.shape[1]
    for r in range(out.shape[0]):
        first, end = counts[r], counts[r + 1]
        if end - first == 1:  # SegmentSum copies a row of one entry: a -0.0 product stays -0.0
            i = positions[first]
            for j in range(width):
                out[r, j] = table[values[i], j] * weights[i]
        elif end - first >= EIGEN_UNROLL:
            products = np.empty((1, end - first, width), table.dtype)
            for k in range(first, end):
                i = positions[k]
                for j in range(width):
                    products[0, k - first, j] = table[values[i], j] * weights[i]
            sums = sum_preserving_as_tf(products)
            for j in range(width):
                out[r, j] = sums[0, j]
        else:
            for k in range(first, end):  # out is zeroed: 0 + the first product, as SegmentSum adds
                i = positions[k]
                for j in range(width):
                    out[r, j] += table[values[i], j] * weights[i]
        if mode == MEAN and end > first:
            total = weights[positions[first]]  # 0 + the first weight: a -0.0 is 0 either way below
            for k in range(first + 1, end):
                total += weights[positions[k]]
            for j in range(width):
                out[r, j] = out[r, j] / total if total != 0 else 0
    return out

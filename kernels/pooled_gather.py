"""Pooled gather: Sum or Mean over axis 1 of Gather(table, ids[rows, k]), in one pass.

The Keras way to pool an embedding (``reduce_mean(Embedding(ids), axis=1)``): instead of a
[rows, k, width] gather, a transpose and a row reduction, each output row adds its k table rows
straight into the output, in the order TF's reduction over the middle axis adds in
(kernels/reduce.py: Eigen's, which takes 4 accumulators from k = 16 on and rows of k where the
table has one column), so results are bit-identical. ``mean`` divides by k as reduce.py does (an
empty axis gives NaN).
``strict``: the gather was a ResourceGather, which checks its ids even when the table has no
columns (GatherV2 then checks nothing).
"""
import numpy as np
from numba import njit

from .gather import index_miss
from .prefetch import PREFETCH_IDS, prefetch_row
from .reduce import EIGEN_UNROLL, PACKET_BYTES, in_whole_packet, reduce_sum


@njit(cache=True, nogil=True)
def pooled_gather(table, ids, mean, strict, err):
    rows, k = ids.shape
    n, width = table.shape
    out = np.empty((rows, width), table.dtype)
    if rows == 0 or (width == 0 and not strict):
        return out
    for r in range(rows):  # validate every id before any read
        for j in range(k):
            v = ids[r, j]
            if v < 0 or v >= n:
                index_miss(err, ids.shape, r * k + j, v, n)
                return out[:0]
    pool_rows(table, ids, mean, out, 0, rows)
    return out


@njit(cache=True, nogil=True)
def pool_rows(table, ids, mean, out, first_row, total_rows):
    """out[r] = the sum (``mean``: the mean) of table[ids[r, j]] over j, in TF's order, for ids
    already checked. These are rows first_row.. of TF's [total_rows, k, width] gather reduced
    over k: where an output lies in Eigen's packets (kernels/reduce.py) depends on its place in
    the whole. ``out``: [rows, width], or a feature layer's column slice (kernels/bag_layer.py).
    Each row is summed in a contiguous buffer and stored once: a strided ``out`` stays fast."""
    rows, k = ids.shape
    width = table.shape[1]
    if k == 0:  # the sum of nothing, or its mean 0/0
        for r in range(rows):
            for c in range(width):
                out[r, c] = np.nan if mean else 0
        return
    lanes = PACKET_BYTES // table.itemsize
    if width == 1 and k > 1:  # TF views [rows, k, 1] as rows of k: the innermost order
        terms = np.empty((rows, k), table.dtype)
        for r in range(rows):
            for j in range(k):
                terms[r, j] = table[ids[r, j], 0]
        sums = reduce_sum(terms, lanes)
        for r in range(rows):
            out[r, 0] = sums[r] / k if mean else sums[r]
        return
    unrolled = (k // 4) * 4 if k >= EIGEN_UNROLL and lanes > 0 else 0
    acc = np.empty((4, width), table.dtype)
    zero = np.zeros(1, table.dtype)[0]
    ahead = max(PREFETCH_IDS // k, 1)  # in output rows
    for r in range(min(ahead, rows)):
        for j in range(k):
            prefetch_row(table, ids[r, j])
    for r in range(rows):  # plain 2-D indexing: row views would cost reference counting per row
        if r + ahead < rows:
            for j in range(k):
                prefetch_row(table, ids[r + ahead, j])
        if k == 1:  # TF reduces nothing over a size-1 axis: a copy, -0.0 stays -0.0
            t = ids[r, 0]
            for c in range(width):
                out[r, c] = table[t, c]
            continue
        for a in range(4 if unrolled else 1):
            for c in range(width):
                acc[a, c] = zero  # TF adds from +0.0
        for j in range(0, unrolled, 4):
            for a in range(4):
                t = ids[r, j + a]
                for c in range(width):
                    acc[a, c] += table[t, c]
        for a in range(1, 4 if unrolled else 1):
            for c in range(width):
                acc[0, c] += acc[a, c]
        for j in range(unrolled, k):
            t = ids[r, j]
            for c in range(width):
                acc[0, c] += table[t, c]
        if unrolled:  # outputs Eigen computes one at a time add left to right
            for c in range(width):
                if not in_whole_packet((first_row + r) * width + c, total_rows * width, width, lanes):
                    s = zero
                    for j in range(k):
                        s += table[ids[r, j], c]
                    acc[0, c] = s
        if mean:
            for c in range(width):
                acc[0, c] = acc[0, c] / k
        for c in range(width):
            out[r, c] = acc[0, c]

"""Weighted embedding bag: embedding_lookup_sparse's tail with weights (a weighted categorical
column's embedding, any combiner) in one pass, and over dense ids the whole column.

``weighted_bag`` replaces SparseFillEmptyRows of the ids and of the weights -> Unique ->
ResourceGather -> GatherV2 -> Mul by the weights -> SegmentSum (-> DivNoNan by the SegmentSum of
the weights, or by the Sqrt of that of their squares) -> Select(empty rows, 0): out[r] =
sum(table[ids[i]] * weights[i]) over the entries i of row r in input order (over the weights' sum
too for the mean, over the square root of the sum of their squares for sqrtn), empty rows zero.
The same bits: each product is rounded to the table's dtype first, as Mul does; SegmentSum copies
a row of one entry and adds the others from zero in TF's Eigen order (kernels/segment_sum.py: in
turn below 16 entries, the weights always: a column of one is no packet); DivNoNan gives 0 for a
divisor of 0.
Sqrtn squares each weight as w * w: its graph's Pow(w, 2) is Square in TF's runtime
(codegen/lowerings/pow.py). ``mode``: 0 sum, 1 mean, 2 sqrtn.

``dense_weighted_string_bag``, ``dense_weighted_vocabulary_bag`` and ``dense_weighted_int_bag``
are the whole column over dense ids S (strings hashed or looked up in a vocabulary, or integers as
int_bag.py makes their ids) and dense weights W
(feature_column/weighted_bag.py has the graph): S's ids in order and W's non-zero values in order
are paired one to one, as the column's gathers pair them (whatever W's shape); ids < 0 are
dropped with their weights, and for the mean and sqrtn the pairs whose weight is not > 0 (TF
prunes them: NaN too) (``pair_weights``); the rest as above.
"""
import numpy as np
from numba import njit

from .embedding_bag import rows_of_entries
from .errors import set_error
from .int_bag import int_ids
from .reduce import EIGEN_UNROLL, sum_preserving_as_tf
from .string_bag import FIRST_ROW, check_buckets, hash_rows, start_bag
from .vocabulary_bag import vocabulary_ids

SUM, MEAN, SQRTN = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _weight_term(w, mode):
    """What the divisor sums of a weight: the weight (mean), its square (sqrtn)."""
    return w * w if mode == SQRTN else w


@njit(cache=True, nogil=True)
def pool_weighted(table, ids, weights, starts, rows, mode, out):
    """Row r of ``out`` (zeroed) from the entries starts[r] .. starts[r + 1] of ``ids`` and
    ``weights``, as SegmentSum and DivNoNan give it (module doc); the ids were checked against the
    table."""
    width = table.shape[1]
    divisor = np.empty(1, weights.dtype)  # rounded to the weights' dtype, as TF's tensors are
    for r in range(rows):
        first, end = starts[r], starts[r + 1]
        if end - first == 1:  # SegmentSum copies a row of one entry: a -0.0 product stays -0.0
            for j in range(width):
                out[r, j] = table[ids[first], j] * weights[first]
        elif end - first >= EIGEN_UNROLL:
            products = np.empty((1, end - first, width), table.dtype)
            for k in range(first, end):
                for j in range(width):
                    products[0, k - first, j] = table[ids[k], j] * weights[k]
            sums = sum_preserving_as_tf(products)
            for j in range(width):
                out[r, j] = sums[0, j]
        else:
            for k in range(first, end):  # out is zeroed: 0 + the first product, as SegmentSum adds
                for j in range(width):
                    out[r, j] += table[ids[k], j] * weights[k]
        if mode != SUM and end > first:
            total = _weight_term(weights[first], mode)  # 0 + the first term: a -0.0 is 0 either way below
            for k in range(first + 1, end):
                total += _weight_term(weights[k], mode)
            divisor[0] = total if mode == MEAN else np.sqrt(total)
            for j in range(width):
                out[r, j] = out[r, j] / divisor[0] if divisor[0] != 0 else 0


@njit(cache=True, nogil=True)
def weighted_bag(indices, values, weights, dense_shape, table, mode, err):
    out, counts, ids, positions = rows_of_entries(indices, values, weights.shape[0], dense_shape, table, err)
    given = np.empty(positions.shape[0], weights.dtype)
    for k in range(positions.shape[0]):
        given[k] = weights[positions[k]]
    pool_weighted(table, ids, given, counts, out.shape[0], mode, out)
    return out


@njit(cache=True, nogil=True)
def pair_weights(ids, starts, rows, weights, mode, err):
    """The column's pairing of its listed ``ids`` (row r's from starts[r] to starts[r + 1]) with
    the non-zero values of ``weights`` in order, as its gathers do it: ids < 0 dropped with their
    weights (the id filter's LogicalAnd with the weights' shape, which broadcasts a length of 1),
    for the mean and sqrtn the pairs whose weight is not > 0 too. Closes ``ids`` and ``starts`` up
    over what it drops and returns the kept weights beside them; on unpaired counts ``err`` is TF's
    error."""
    given = weights.reshape(weights.size)
    n_ids = starts[rows]
    kept = np.empty(max(given.shape[0], n_ids) + 1, given.dtype)  # room for either side's count
    n_weights = 0
    for v in given:  # the non-zero values, listed without a branch
        kept[n_weights] = v
        n_weights += v != 0
    if n_ids != n_weights and n_weights == 1:  # [ids] AND [1]: the weights' gather at the kept ids
        first = -1
        for j in range(n_ids):
            if ids[j] >= 0:
                if first >= 0 or j > 0:
                    set_error(err, "indices[", 1 if first >= 0 else 0, "] = ", j, " is not in [0, 1)")
                    return kept
                first = j  # (then 0: ids[0], weighed by the one weight)
    elif n_ids != n_weights and n_ids == 1:  # [1] AND [weights]: the ids' gather, if the id is kept
        if ids[0] >= 0 and n_weights > 1:
            set_error(err, "indices[1] = 1 is not in [0, 1)")
            return kept
        if n_weights == 0:
            ids[0] = -1  # broadcast to nothing: the id is dropped
    elif n_ids != n_weights:
        set_error(err, "Incompatible shapes: [", n_ids, "] vs. [", n_weights, "]")
        return kept
    n, first = 0, 0
    for r in range(rows):  # close up over dropped ids and (but for the sum) weights not > 0
        end = starts[r + 1]
        starts[r] = n
        for j in range(first, end):
            ids[n], kept[n] = ids[j], kept[j]
            n += ids[j] >= 0 and (mode == SUM or kept[j] > 0)
        first = end
    starts[rows] = n
    return kept


@njit(cache=True, nogil=True, inline="always")
def _weighted_pool(ids, starts, rows, weights, table, mode, out, err):
    kept = pair_weights(ids, starts, rows, weights, mode, err)
    if err[0] == 0:
        check_buckets(ids, starts[rows], rows, table.shape[0], err)
    if err[0] != 0:
        return out[:0]
    pool_weighted(table, ids, kept, starts, rows, mode, out)
    return out


@njit(cache=True, nogil=True)
def dense_weighted_string_bag(strings, offsets, data, new_shape, weights, table, num_buckets, mode, err):
    """``strings``: S (C-contiguous, any rank); ``new_shape``: the reshape's target (S's shape when
    the chain has no SparseReshape); ``weights``: W (C-contiguous, any shape)."""
    flat = strings.reshape(strings.size)
    rows, inner, starts, out = start_bag(np.array(strings.shape, np.int64), new_shape, table, err)
    if err[0] != 0:
        return out
    ids = np.empty(flat.shape[0], np.int64)
    hash_rows(flat, offsets, data, FIRST_ROW, rows, inner, np.uint64(num_buckets), ids, starts)
    return _weighted_pool(ids, starts, rows, weights, table, mode, out, err)


@njit(cache=True, nogil=True)
def dense_weighted_int_bag(x, new_shape, weights, table, ignore, kind, default, slots, keys, values, num_buckets,
                           mode, err):
    """The same over an integer X: its ids as ``int_bag`` makes them (int_bag.py ``int_ids``)."""
    rows, inner, starts, out = start_bag(np.array(x.shape, np.int64), new_shape, table, err)
    if err[0] != 0:
        return out
    ids = int_ids(x, ignore, kind, default, slots, keys, values, num_buckets, rows, inner, starts)
    return _weighted_pool(ids, starts, rows, weights, table, mode, out, err)


@njit(cache=True, nogil=True)
def dense_weighted_vocabulary_bag(strings, offsets, data, new_shape, weights, table, default, slots, key_offsets,
                                  key_data, values, num_buckets, offset, mode, err):
    """The same over strings looked up in a frozen vocabulary (vocabulary_bag.py ``vocabulary_ids``)."""
    flat = strings.reshape(strings.size)
    rows, inner, starts, out = start_bag(np.array(strings.shape, np.int64), new_shape, table, err)
    if err[0] != 0:
        return out
    ids = vocabulary_ids(flat, offsets, data, rows, inner, default, slots, key_offsets, key_data, values, num_buckets,
                         offset, starts)
    return _weighted_pool(ids, starts, rows, weights, table, mode, out, err)

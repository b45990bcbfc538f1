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
from .reduce import EIGEN_UNROLL, PACKET_BYTES, add_rows, in_whole_packet, sum_rows_as_tf
from .row_lanes import LANES, pool_lanes, pool_lanes_from_zero


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
    pool_rows(table, ids, mean, out, np.int64(0), np.int64(0), rows)
    return out


@njit(cache=True, nogil=True)
def pool_rows(table, ids, mean, out, column, first_row, total_rows):
    """out[first_row + r, column:column + width] = the sum (``mean``: the mean) of table[ids[r, j]]
    over j, in TF's order, for ids already checked. These are rows first_row.. of TF's
    [total_rows, k, width] gather reduced over k: where an output lies in Eigen's packets
    (kernels/reduce.py) depends on its place in the whole. ``out`` (C-ordered): the output, or a
    feature layer's (kernels/bag_layer.py), whose column starts at ``column``."""
    if pools_one_column(table, ids):
        pool_one_column(table, ids, mean, out, column, first_row)
    else:
        pool_vectors(table, ids, mean, out, column, first_row, total_rows)


@njit(cache=True, nogil=True, inline="always")
def pools_one_column(table, ids):
    """Whether pool_rows takes pool_one_column's way: a table of one column, rows of k > 1."""
    return table.shape[1] == 1 and ids.shape[1] > 1


@njit(cache=True, nogil=True)
def pool_one_column(table, ids, mean, out, column, first_row):
    """pool_rows of a table of one column and k > 1: TF views [rows, k, 1] as rows of k and sums
    them in the innermost order, kernels/reduce.py's (its own compile of ~1.7 s: a feature layer
    compiles it only for such tables, kernels/bag_layer.py)."""
    rows, k = ids.shape
    terms = np.empty((rows, k), table.dtype)
    for r in range(rows):
        for j in range(k):
            terms[r, j] = table[ids[r, j], 0]
    sums = sum_rows_as_tf(terms)
    for r in range(rows):
        out[first_row + r, column] = sums[r] / k if mean else sums[r]


@njit(cache=True, nogil=True, inline="always")  # into pool_rows and the layer's pool task (bag_layer.py)
def pool_vectors(table, ids, mean, out, column, first_row, total_rows):
    """pool_rows of every other table and k: rows of table rows added as vectors."""
    table = np.ascontiguousarray(table)  # rows read as vectors (no copy of a C-ordered table)
    rows, k = ids.shape
    width = table.shape[1]
    if k == 0:  # the sum of nothing, or its mean 0/0
        for r in range(rows):
            for c in range(width):
                out[first_row + r, column + c] = np.nan if mean else 0
        return
    lanes = PACKET_BYTES // table.itemsize
    if k >= EIGEN_UNROLL and lanes > 0:
        _pool_unrolled(table, ids, mean, out, column, first_row, total_rows, lanes)
    elif k <= 4 and width % LANES == 0:
        _pool_short_rows(table, ids, mean, out, column, first_row)
    else:
        _pool_in_order(table, ids, mean, out, column, first_row)


@njit(cache=True, nogil=True, inline="always")
def _in_dtype(table, k):
    """``k`` in the table's dtype (a float32 divisor keeps a mean's division in float32)."""
    scalar = np.empty(1, table.dtype)
    scalar[0] = k
    return scalar[0]


@njit(cache=True, nogil=True, inline="always")
def _divide(acc, k, divisor):
    """acc / k. The same bits as dividing in float64 and rounding when ``divisor`` (k in acc's
    dtype) is exact (a correctly rounded double quotient rounds again correctly); the float64
    division Numba makes of ``acc / k`` took a pooled row of 4 ids 40 ns against 24 (one thread)."""
    if divisor == k:
        for c in range(acc.shape[0]):
            acc[c] = acc[c] / divisor
    else:
        for c in range(acc.shape[0]):
            acc[c] = acc[c] / k


@njit(cache=True, nogil=True, inline="always")  # once a row: a call would take references
def _prefetch_rows(table, ids, r):
    for j in range(ids.shape[1]):
        prefetch_row(table, ids[r, j])


@njit(cache=True, nogil=True)
def _pool_short_rows(table, ids, mean, out, column, first_row):
    """pool_rows for k <= 4 and widths of whole LANES: _pool_in_order's order, each row's terms
    added as vectors and stored at once (row_lanes.py)."""
    rows, k = ids.shape
    width = table.shape[1]
    scale = _in_dtype(table, k if mean else 1)  # a sum divided by 1: itself
    ahead = max(PREFETCH_IDS // k, 1)  # in output rows
    for r in range(min(ahead, rows)):
        _prefetch_rows(table, ids, r)
    for r in range(rows):
        if r + ahead < rows:
            _prefetch_rows(table, ids, r + ahead)
        o, a = first_row + r, ids[r, 0]
        for c in range(0, width, LANES):
            if k == 1:  # TF reduces nothing over a size-1 axis: a copy, -0.0 stays -0.0
                pool_lanes(out, o, column + c, table, a, a, a, a, 1, scale, c)
            elif k == 2:
                pool_lanes_from_zero(out, o, column + c, table, a, ids[r, 1], a, a, 2, scale, c)
            elif k == 3:
                pool_lanes_from_zero(out, o, column + c, table, a, ids[r, 1], ids[r, 2], a, 3, scale, c)
            else:
                pool_lanes_from_zero(out, o, column + c, table, a, ids[r, 1], ids[r, 2], ids[r, 3], 4, scale, c)


@njit(cache=True, nogil=True)
def _pool_in_order(table, ids, mean, out, column, first_row):
    """pool_rows for k < 16: each row's terms added in k order from +0.0."""
    rows, k = ids.shape
    width = table.shape[1]
    acc = np.empty(width, table.dtype)
    divisor = _in_dtype(table, k)
    ahead = max(PREFETCH_IDS // k, 1)  # in output rows
    for r in range(min(ahead, rows)):
        _prefetch_rows(table, ids, r)
    for r in range(rows):  # plain 2-D indexing: row views would cost reference counting per row
        if r + ahead < rows:
            _prefetch_rows(table, ids, r + ahead)
        t = ids[r, 0]
        if k == 1:  # TF reduces nothing over a size-1 axis: a copy, -0.0 stays -0.0
            for c in range(width):
                out[first_row + r, column + c] = table[t, c]
            continue
        for j in range(0, k, 4):  # TF adds from +0.0
            n = min(4, k - j)
            add_rows(acc, table, n, ids[r, j], ids[r, j + min(1, n - 1)], ids[r, j + min(2, n - 1)],
                     ids[r, j + n - 1], j == 0)
        if mean:
            _divide(acc, k, divisor)
        for c in range(width):
            out[first_row + r, column + c] = acc[c]


@njit(cache=True, nogil=True)
def _pool_unrolled(table, ids, mean, out, column, first_row, total_rows, lanes):
    """pool_rows for k >= 16: every fourth term into one of 4 accumulators, added into the first,
    then the terms left over, where TF computes the output in a whole packet; else in k order."""
    rows, k = ids.shape
    width = table.shape[1]
    unrolled = (k // 4) * 4
    acc = np.empty(width, table.dtype)
    acc1 = np.empty(width, table.dtype)
    acc2 = np.empty(width, table.dtype)
    acc3 = np.empty(width, table.dtype)
    zero = np.zeros(1, table.dtype)[0]
    divisor = _in_dtype(table, k)
    for r in range(rows):
        if r + 1 < rows:
            _prefetch_rows(table, ids, r + 1)
        for c in range(width):
            acc[c] = zero  # TF adds from +0.0
            acc1[c] = zero
            acc2[c] = zero
            acc3[c] = zero
        for j in range(0, unrolled, 4):
            t0, t1, t2, t3 = ids[r, j], ids[r, j + 1], ids[r, j + 2], ids[r, j + 3]
            for c in range(width):
                acc[c] += table[t0, c]
                acc1[c] += table[t1, c]
                acc2[c] += table[t2, c]
                acc3[c] += table[t3, c]
        for c in range(width):
            acc[c] += acc1[c]
            acc[c] += acc2[c]
            acc[c] += acc3[c]
        for j in range(unrolled, k):
            t = ids[r, j]
            for c in range(width):
                acc[c] += table[t, c]
        if width % lanes:  # some outputs straddle packets: TF computes them one at a time
            for c in range(width):
                if not in_whole_packet((first_row + r) * width + c, total_rows * width, width, lanes):
                    s = zero
                    for j in range(k):
                        s += table[ids[r, j], c]
                    acc[c] = s
        if mean:
            _divide(acc, k, divisor)
        for c in range(width):
            out[first_row + r, column + c] = acc[c]

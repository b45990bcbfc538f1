"""Pooled gather: Sum or Mean over axis 1 of Gather(table, ids[rows, k]), in one pass.

The Keras way to pool an embedding (``reduce_mean(Embedding(ids), axis=1)``): instead of a
[rows, k, width] gather, a transpose and a row reduction, each output row adds its k table rows
in k order (the order TF's reduction over the middle axis adds in, so results are bit-identical)
straight into the output. ``mean`` divides by k as reduce.py does (an empty axis gives NaN).
``strict``: the gather was a ResourceGather, which checks its ids even when the table has no
columns (GatherV2 then checks nothing).
"""
import numpy as np
from numba import njit

from .gather import index_miss
from .prefetch import PREFETCH_IDS, prefetch_row


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
    pool_rows(table, ids, mean, out)
    return out


@njit(cache=True, nogil=True)
def pool_rows(table, ids, mean, out):
    """out[r] = the sum (``mean``: the mean) of table[ids[r, j]] over j, in TF's order, for ids
    already checked. ``out``: [rows, width], or a feature layer's column slice (kernels/bag_layer.py).
    Each row is summed in a contiguous buffer and stored once: a strided ``out`` stays fast."""
    rows, k = ids.shape
    width = table.shape[1]
    if k == 0:  # the sum of nothing, or its mean 0/0
        for r in range(rows):
            for c in range(width):
                out[r, c] = np.nan if mean else 0
        return
    acc = np.empty(width, table.dtype)
    zero = np.zeros(1, table.dtype)[0]
    ahead = max(PREFETCH_IDS // k, 1)  # in output rows
    for r in range(min(ahead, rows)):
        for j in range(k):
            prefetch_row(table, ids[r, j])
    for r in range(rows):  # plain 2-D indexing: row views would cost reference counting per row
        if r + ahead < rows:
            for j in range(k):
                prefetch_row(table, ids[r + ahead, j])
        t = ids[r, 0]
        if k == 1:  # TF reduces nothing over a size-1 axis: a copy, -0.0 stays -0.0
            for c in range(width):
                out[r, c] = table[t, c]
            continue
        for c in range(width):
            acc[c] = zero + table[t, c]  # TF adds from +0.0
        for j in range(1, k):
            t = ids[r, j]
            for c in range(width):
                acc[c] += table[t, c]
        if mean:
            for c in range(width):
                acc[c] = acc[c] / k
        for c in range(width):
            out[r, c] = acc[c]

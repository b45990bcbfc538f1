"""Pooled gather: Sum or Mean over axis 1 of Gather(table, ids[rows, k]), in one pass.

The Keras way to pool an embedding (``reduce_mean(Embedding(ids), axis=1)``): instead of a
[rows, k, width] gather, a transpose and a row reduction, each output row adds its k table rows
in k order (the order TF's reduction over the middle axis adds in, so results are bit-identical)
straight into the output. ``mean`` divides by k as reduce.py does (an empty axis gives NaN).
"""
import numpy as np
from numba import njit

from .errors import int_text, set_error
from .gather import _position


@njit(cache=True, nogil=True)
def pooled_gather(table, ids, mean, err):
    rows, k = ids.shape
    n, width = table.shape
    out = np.empty((rows, width), table.dtype)
    if width == 0 or rows == 0:  # TF's gather checks nothing when there is nothing to copy
        return out
    for r in range(rows):  # validate every id before any read
        for j in range(k):
            v = ids[r, j]
            if v < 0 or v >= n:
                set_error(err, "indices" + _position(ids.shape, r * k + j) + " = " + int_text(v)
                          + " is not in [0, " + int_text(n) + ")")
                return out[:0]
    if k == 0:  # the sum of nothing, or its mean 0/0
        out[:] = np.nan if mean else 0
        return out
    zero = np.zeros(1, table.dtype)[0]
    for r in range(rows):
        o = out[r]  # row views: LLVM vectorizes the width loops
        t = table[ids[r, 0]]
        if k == 1:  # TF reduces nothing over a size-1 axis: a copy, -0.0 stays -0.0
            o[:] = t
            continue
        for c in range(width):
            o[c] = zero + t[c]  # TF adds from +0.0
        for j in range(1, k):
            t = table[ids[r, j]]
            for c in range(width):
                o[c] += t[c]
        if mean:
            for c in range(width):
                o[c] = o[c] / k
    return out

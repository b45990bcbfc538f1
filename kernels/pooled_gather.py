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
    out = np.zeros((rows, width), table.dtype)
    if width == 0:  # TF's gather checks nothing when there is nothing to copy
        return out
    for r in range(rows):  # validate every id before any read
        for j in range(k):
            v = ids[r, j]
            if v < 0 or v >= n:
                set_error(err, "indices" + _position(ids.shape, r * k + j) + " = " + int_text(v)
                          + " is not in [0, " + int_text(n) + ")")
                return out[:0]
    for r in range(rows):
        if k == 1:  # TF reduces nothing over a size-1 axis: the value is copied, -0.0 stays -0.0
            for c in range(width):
                out[r, c] = table[ids[r, 0], c]
            continue
        for j in range(k):
            row = ids[r, j]
            for c in range(width):
                out[r, c] += table[row, c]
        if mean:
            for c in range(width):
                out[r, c] = out[r, c] / k if k > 0 else np.nan
    return out

"""GatherV2 / ResourceGather (batch_dims=0): params viewed as [outer, n, inner], ids flattened."""
import numpy as np
from numba import njit

from .errors import int_text, set_error


@njit(cache=True, nogil=True)
def _position(shape, flat):
    """TF's name for element ``flat`` of an array of ``shape`` in messages: "[1,0]"."""
    s = ""
    for d in range(len(shape) - 1, -1, -1):
        k = flat % shape[d] if shape[d] > 0 else 0
        flat = flat // shape[d] if shape[d] > 0 else 0
        s = ("," if d > 0 else "") + str(k) + s
    return "[" + s + "]"


@njit(cache=True, nogil=True)
def gather(params, ids, axis, strict, err):
    """Returns (out as [outer, len(ids), inner], output shape vector). Ids are range-checked first.

    Like TF's GatherV2, nothing is checked when there is nothing to copy (outer or inner size 0),
    unless ``strict``: ResourceGather checks its ids whatever their rows' width.
    """
    p = np.ascontiguousarray(params)
    outer = 1
    for d in range(axis):
        outer *= p.shape[d]
    n = p.shape[axis]
    inner = 1
    for d in range(axis + 1, p.ndim):
        inner *= p.shape[d]
    flat_ids = np.ascontiguousarray(ids).ravel()
    m = flat_ids.shape[0]
    shape = np.empty(p.ndim - 1 + ids.ndim, np.int64)
    for d in range(axis):
        shape[d] = p.shape[d]
    for d in range(ids.ndim):
        shape[axis + d] = ids.shape[d]
    for d in range(axis + 1, p.ndim):
        shape[ids.ndim + d - 1] = p.shape[d]
    out = np.empty((outer, m, inner), p.dtype)
    if (outer == 0 or inner == 0) and not strict:
        return out, shape
    for j in range(m):
        k = flat_ids[j]
        if k < 0 or k >= n:
            set_error(err, "indices" + _position(ids.shape, j) + " = " + int_text(k) + " is not in [0, " + str(n) + ")")
            return out[:0], shape
    src = p.reshape((outer, n, inner))
    for o in range(outer):  # explicit scalar loops: Numba slice assignment costs ~10 ns a call
        for j in range(m):
            row = flat_ids[j]
            for c in range(inner):
                out[o, j, c] = src[o, row, c]
    return out, shape

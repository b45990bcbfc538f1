"""Elementwise families: broadcasting binary ops (comparisons, arithmetic), Select, casts, fills.

``broadcast_shape`` validates first, so NumPy-style broadcasting inside Numba never raises.
"""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def broadcast_shape(a_shape, b_shape, a_rank, b_rank, err):
    """TF/NumPy broadcast of two shapes given as tuples plus true ranks (scalars travel as (1,))."""
    rank = max(a_rank, b_rank)
    out = np.ones(rank, np.int64)
    for i in range(rank):
        da = a_shape[a_rank - 1 - i] if i < a_rank else 1
        db = b_shape[b_rank - 1 - i] if i < b_rank else 1
        if da != db and da != 1 and db != 1:
            set_error(err, "Incompatible shapes: dimension " + str(rank - 1 - i) + " is " + str(da) + " vs. " + str(db))
            return out
        out[rank - 1 - i] = max(da, db) if da != 0 and db != 0 else 0
    return out


@njit(cache=True, nogil=True)
def select_rows(cond, t, e):
    """Select (v1) with a vector condition picking whole rows of t / e."""
    out = e.copy()
    for i in range(cond.shape[0]):
        if cond[i]:
            out[i] = t[i]
    return out


@njit(cache=True, nogil=True)
def string_equals_const(ids, off, dat, const_bytes):
    """Equal(strings, constant string): compares bytes without building Python strings."""
    flat = np.ascontiguousarray(ids).ravel()
    out = np.empty(flat.shape[0], np.bool_)
    n = const_bytes.shape[0]
    for i in range(flat.shape[0]):
        k = flat[i]
        start, stop = off[k], off[k + 1]
        same = stop - start == n
        j = 0
        while same and j < n:
            same = dat[start + j] == const_bytes[j]
            j += 1
        out[i] = same
    return out.reshape(ids.shape)

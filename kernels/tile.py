"""Tile for ranks 1 and 2 (the shapes feature columns tile)."""
import numpy as np
from numba import njit

from .errors import INT64_MAX, out_of_memory, set_error



@njit(cache=True, nogil=True)
def _tiled(n, m):
    """n * m, or -1 where that overflows int64 (TF would wrap around)."""
    return -1 if n > 0 and m > INT64_MAX // n else n * m


@njit(cache=True, nogil=True)
def tile_2d(x, multiples, err):
    if multiples.shape[0] != 2:
        set_error(err, "Expected multiples argument to be a vector of length 2 but got length ", multiples.shape[0])
        return np.empty((0, 0), x.dtype)
    m0 = np.int64(multiples[0])
    m1 = np.int64(multiples[1])
    if m0 < 0 or m1 < 0:
        set_error(err, "Expected multiples[", "0" if m0 < 0 else "1", "] >= 0, but got ", min(m0, m1))
        return np.empty((0, 0), x.dtype)
    r, c = x.shape[0], x.shape[1]
    rows, cols = _tiled(r, m0), _tiled(c, m1)
    if rows < 0 or cols < 0 or (rows > 0 and cols > INT64_MAX // rows):
        set_error(err, "Tile: the output shape overflows int64")
        return np.empty((0, 0), x.dtype)
    try:
        out = np.empty((rows, cols), x.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, cols), np.int64))
        return np.empty((0, 0), x.dtype)
    if rows == 0 or cols == 0:  # the loops below would still spin through huge multiples
        return out
    for a in range(m0):  # block loops: no modulo per element
        for i in range(r):
            for b in range(m1):
                for j in range(c):
                    out[a * r + i, b * c + j] = x[i, j]
    return out


@njit(cache=True, nogil=True)
def tile_1d(x, multiples, err):
    if multiples.shape[0] != 1:
        set_error(err, "Expected multiples argument to be a vector of length 1 but got length ", multiples.shape[0])
        return np.empty(0, x.dtype)
    m = np.int64(multiples[0])
    if m < 0:
        set_error(err, "Expected multiples[0] >= 0, but got ", m)
        return np.empty(0, x.dtype)
    n = x.shape[0]
    total = _tiled(n, m)
    if total < 0:
        set_error(err, "Tile: the output shape overflows int64")
        return np.empty(0, x.dtype)
    try:
        out = np.empty(total, x.dtype)
    except Exception:
        out_of_memory(err, np.array((total,), np.int64))
        return np.empty(0, x.dtype)
    if total == 0:
        return out
    for a in range(m):  # block loops: no modulo per element
        for i in range(n):
            out[a * n + i] = x[i]
    return out

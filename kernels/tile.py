"""Tile for ranks 1 and 2 (the shapes feature columns tile)."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def tile_2d(x, multiples, err):
    if multiples.shape[0] != 2:
        set_error(err, "Expected multiples argument to be a vector of length 2 but got length " + str(multiples.shape[0]))
        return np.empty((0, 0), x.dtype)
    m0 = np.int64(multiples[0])
    m1 = np.int64(multiples[1])
    if m0 < 0 or m1 < 0:
        set_error(err, "Expected multiples to be non-negative")
        return np.empty((0, 0), x.dtype)
    r, c = x.shape[0], x.shape[1]
    out = np.empty((r * m0, c * m1), x.dtype)
    for i in range(r * m0):
        for j in range(c * m1):
            out[i, j] = x[i % r, j % c]
    return out


@njit(cache=True, nogil=True)
def tile_1d(x, multiples, err):
    if multiples.shape[0] != 1 or multiples[0] < 0:
        set_error(err, "Expected multiples argument to be a non-negative vector of length 1")
        return np.empty(0, x.dtype)
    n = x.shape[0]
    m = np.int64(multiples[0])
    out = np.empty(n * m, x.dtype)
    for i in range(n * m):
        out[i] = x[i % n]
    return out

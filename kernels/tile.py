"""Tile for ranks 1 and 2 (the shapes feature columns tile)."""
import numpy as np
from numba import njit

from .errors import INT64_MAX, multiply_sizes, out_of_memory, set_error


@njit(cache=True, nogil=True)
def _add_dim(elements, dim, m, i, err):
    """The output's size along dimension ``i`` (``dim`` tiled ``m`` times) and its element count so
    far, with TF's checks as it builds the shape: multiples[i] >= 0, then AddDimWithStatus of the
    product, wrapped as TF's int64 arithmetic wraps it (``_wraps``). -1 with ``err`` set when
    refused."""
    if m < 0:
        set_error(err, "Expected multiples[", i, "] >= 0, but got ", m)
        return np.int64(-1), np.int64(-1)
    size = np.int64(np.uint64(dim) * np.uint64(m))  # unsigned: LLVM may assume a signed product never wraps
    if size < 0:
        set_error(err, "Expected a non-negative size, got ", size)
        return np.int64(-1), np.int64(-1)
    elements = multiply_sizes(elements, size, err)
    return (size, elements) if elements >= 0 else (np.int64(-1), np.int64(-1))


@njit(cache=True, nogil=True)
def _wraps(dim, m):
    """Whether dim * m wrapped. TF then tiles into the wrapped shape: empty (4 * 2**62 is 0) or
    too large to allocate, as here. A non-empty one we refuse: TF fills it as Eigen's blocked
    broadcast happens to, not as a tiling ((3, 8) tiled [2, 2**61 + 1] is 6 copies of row 0)."""
    return m != 0 and dim > INT64_MAX // m


@njit(cache=True, nogil=True)
def tile_2d(x, multiples, err):
    if multiples.shape[0] != 2:
        set_error(err, "Expected multiples argument to be a vector of length 2 but got length ", multiples.shape[0])
        return np.empty((0, 0), x.dtype)
    m0 = np.int64(multiples[0])
    m1 = np.int64(multiples[1])
    r, c = x.shape[0], x.shape[1]
    rows, elements = _add_dim(np.int64(1), np.int64(r), m0, np.int64(0), err)
    if rows < 0:
        return np.empty((0, 0), x.dtype)
    cols, elements = _add_dim(elements, np.int64(c), m1, np.int64(1), err)
    if cols < 0:
        return np.empty((0, 0), x.dtype)
    try:
        out = np.empty((rows, cols), x.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, cols), np.int64))
        return np.empty((0, 0), x.dtype)
    if rows == 0 or cols == 0:  # the loops below would still spin through huge multiples
        return out
    if _wraps(r, m0) or _wraps(c, m1):
        set_error(err, "Tile: the output shape overflows int64")
        return np.empty((0, 0), x.dtype)
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
    n = x.shape[0]
    total, _ = _add_dim(np.int64(1), np.int64(n), m, np.int64(0), err)
    if total < 0:
        return np.empty(0, x.dtype)
    try:
        out = np.empty(total, x.dtype)
    except Exception:
        out_of_memory(err, np.array((total,), np.int64))
        return np.empty(0, x.dtype)
    if total == 0:
        return out
    if _wraps(n, m):
        set_error(err, "Tile: the output shape overflows int64")
        return np.empty(0, x.dtype)
    for a in range(m):  # block loops: no modulo per element
        for i in range(n):
            out[a * n + i] = x[i]
    return out

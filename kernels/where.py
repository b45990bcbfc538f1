"""Where (one input): row-major coordinates of the non-zero / true elements, int64 [n, rank]."""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def where(x, rank):
    flat = np.ascontiguousarray(x).ravel()
    count = 0
    for i in range(flat.shape[0]):
        if flat[i]:
            count += 1
    out = np.empty((count, rank), np.int64)
    dims = np.empty(rank, np.int64)
    for d in range(rank):
        dims[d] = x.shape[d]
    row = 0
    for i in range(flat.shape[0]):
        if flat[i]:
            rem = i
            for d in range(rank - 1, -1, -1):
                out[row, d] = rem % dims[d]
                rem //= dims[d]
            row += 1
    return out

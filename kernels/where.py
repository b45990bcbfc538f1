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
    # Walk a multi-index counter alongside the flat position: no division per element.
    coord = np.zeros(rank, np.int64)
    row = 0
    for i in range(flat.shape[0]):
        if flat[i]:
            for d in range(rank):
                out[row, d] = coord[d]
            row += 1
        d = rank - 1
        while d >= 0:
            coord[d] += 1
            if coord[d] < x.shape[d]:
                break
            coord[d] = 0
            d -= 1
    return out

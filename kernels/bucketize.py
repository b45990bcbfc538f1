"""Bucketize: TF's std::upper_bound over float32 boundaries. The comparison runs in the type C++
promotes to: float32 for float32 and integer inputs (an int64 rounds to the nearest float32
first), float64 for float64 inputs. NaN is never below a boundary, so it lands in the last
bucket."""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def bucketize(x, boundaries):
    flat = x.ravel()
    out = np.empty(flat.shape[0], np.int32)
    n = boundaries.shape[0]
    for i in range(flat.shape[0]):
        v = boundaries.dtype.type(flat[i])
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if v < boundaries[mid]:
                hi = mid
            else:
                lo = mid + 1
        out[i] = lo
    return out

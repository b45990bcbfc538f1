"""OneHot over a [prefix, suffix] view of the indices: output [prefix, depth, suffix], so any
``axis`` is the same loop (the lowering picks where prefix ends)."""
import numpy as np
from numba import njit

from .errors import INT64_MAX, set_error



@njit(cache=True, nogil=True)
def one_hot(indices, depth, on_value, off_value, err):
    prefix, suffix = indices.shape[0], indices.shape[1]
    d = np.int64(depth[0])
    if d < 0:
        set_error(err, "depth must be non-negative, got: ", d)
        return np.empty((0, 0, 0), on_value.dtype)
    if prefix > 0 and suffix > 0 and d > 0 and (d > INT64_MAX // prefix or prefix * d > INT64_MAX // suffix):
        set_error(err, "OneHot: the output shape overflows int64")
        return np.empty((0, 0, 0), on_value.dtype)
    out = np.full((prefix, d, suffix), off_value[0], on_value.dtype)
    on = on_value[0]
    for p in range(prefix):
        for s in range(suffix):
            k = np.int64(indices[p, s])
            if 0 <= k < d:  # out-of-range ids (negative too) give an all-off row, as in TF
                out[p, k, s] = on
    return out

"""Fill: validates the requested dims the way TF's MakeShape does before anything is allocated."""
import numpy as np
from numba import njit

from .errors import INT64_MAX, set_error



@njit(cache=True, nogil=True)
def checked_dims(dims, err):
    """``dims`` as int64, or an error: a negative dim, or a shape with more than 2**63 - 1 elements."""
    out = np.empty(dims.shape[0], np.int64)
    size = 1
    for i in range(dims.shape[0]):
        d = np.int64(dims[i])
        out[i] = d
        if d < 0:
            set_error(err, "Dimension ", d, " must be >= 0")
            return out
    for i in range(dims.shape[0]):
        if out[i] == 0:
            return out
    for i in range(dims.shape[0]):
        if size > INT64_MAX // out[i]:
            set_error(err, "Shape ", out, " would have more than 2**63 - 1 elements")
            return out
        size *= out[i]
    return out


@njit(cache=True, nogil=True)
def scalar_value(value, rank, err):
    """TF accepts a scalar (or, for old graphs, a one-element vector) as the fill value."""
    if value.size != 1 or rank > 1:
        set_error(err, "value must represent a scalar, got shape ", value.shape)
    return value.ravel()[0]

"""ClipByValue: min(max... in TF's order, max(min(t, hi), lo), after TF's shape check (each bound
is a scalar or has the input's shape)."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True, inline="always")
def _named_shape(x, scalar):
    """x's shape as TF's message names it: a scalar travels as a shape-(1,) array (kernels/__init__)
    and is named []."""
    dims = np.array(x.shape, np.int64)
    return dims[:0] if scalar else dims


@njit(cache=True, nogil=True)
def clip_by_value(t, lo, hi, lo_scalar, hi_scalar, err):
    lo_ok = lo_scalar or lo.shape == t.shape
    hi_ok = hi_scalar or hi.shape == t.shape
    if not (lo_ok and hi_ok):
        set_error(err, "clip_value_min and clip_value_max must be either of the same shape as input, or a scalar. input shape: ",
                  t.shape, "clip_value_min shape: ", _named_shape(lo, lo_scalar),
                  "clip_value_max shape: ", _named_shape(hi, hi_scalar))
        return np.empty_like(t)
    flat_t = np.ascontiguousarray(t).ravel()
    flat_lo = np.ascontiguousarray(lo).ravel()
    flat_hi = np.ascontiguousarray(hi).ravel()
    out = np.empty_like(flat_t)
    for i in range(flat_t.shape[0]):
        v = flat_t[i]
        h = flat_hi[0] if hi_scalar else flat_hi[i]
        l = flat_lo[0] if lo_scalar else flat_lo[i]
        v = h if h < v else v
        out[i] = l if v < l else v
    return out.reshape(t.shape)

"""Shape arithmetic kernels: Shape, Reshape's -1 resolution, ExpandDims, Prod over shape vectors."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def shape_of(x, rank, out_dtype_example):
    """Shape (or Size-like) vector of ``x``; ``rank`` is the true rank (x is (1,) for scalars)."""
    out = np.empty(rank, out_dtype_example.dtype)
    for i in range(rank):
        out[i] = x.shape[i]
    return out


@njit(cache=True, nogil=True)
def resolve_reshape(size, shape, err):
    """TF Reshape's target shape with at most one -1 inferred, or an error."""
    out = np.empty(shape.shape[0], np.int64)
    known = 1
    unknown = -1
    for i in range(shape.shape[0]):
        d = np.int64(shape[i])
        if d == -1:
            if unknown >= 0:
                set_error(err, "Reshape: only one input size may be -1, not both " + str(unknown) + " and " + str(i))
                return out
            unknown = i
        elif d < 0:
            set_error(err, "Reshape: size " + str(i) + " must be non-negative, not " + str(d))
            return out
        else:
            known *= d
        out[i] = d
    if unknown >= 0:
        if known == 0:
            if size != 0:
                set_error(err, "Reshape cannot infer the missing input size for an empty tensor unless all specified input sizes are non-zero")
                return out
            out[unknown] = 0
        else:
            if size % known != 0:
                set_error(err, "Input to reshape is a tensor with " + str(size) + " values, but the requested shape requires a multiple of " + str(known))
                return out
            out[unknown] = size // known
    elif known != size:
        set_error(err, "Input to reshape is a tensor with " + str(size) + " values, but the requested shape has " + str(known))
    return out


@njit(cache=True, nogil=True)
def prod_all(x):
    """Prod over every axis of a 1-D shape vector, in the vector's own dtype (TF wraps on overflow)."""
    acc = np.ones(1, x.dtype)
    for i in range(x.shape[0]):
        acc[0] *= x[i]
    return acc


@njit(cache=True, nogil=True)
def sum_all(x):
    acc = np.zeros(1, x.dtype)
    for i in range(x.shape[0]):
        acc[0] += x[i]
    return acc


@njit(cache=True, nogil=True)
def expanded_shape(x, rank, axis, err):
    """ExpandDims: the input's dims with a 1 inserted at ``axis`` (negative counts from the end)."""
    out = np.ones(rank + 1, np.int64)
    if axis < -rank - 1 or axis > rank:
        set_error(err, "Tried to expand dim index " + str(axis) + " for tensor with " + str(rank) + " dimensions.")
        return out
    ax = axis + rank + 1 if axis < 0 else axis
    k = 0
    for d in range(rank + 1):
        if d != ax:
            out[d] = x.shape[k]
            k += 1
    return out

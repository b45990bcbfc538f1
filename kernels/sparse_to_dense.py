"""SparseToDense with TF's checks, in TF's order, before anything is written.

``indices`` arrives as [n, ndims] (the lowering views TF's scalar/vector forms that way);
``values`` is either one value for every index (``values_scalar``) or one per index."""
import numpy as np
from numba import njit

from .errors import out_of_memory, set_error
from .fill import checked_dims

_ORDER_HELP = (" is out of order. Many sparse ops require sorted indices.\n"
               "    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")


@njit(cache=True, nogil=True)
def _first_invalid(indices, shape, err):
    """SparseTensor::IndicesValid: bounds, then lexicographic order, then repeats, row by row."""
    ndims = indices.shape[1]
    for n in range(indices.shape[0]):
        valid, different, increasing = True, n == 0, True
        for d in range(ndims):
            v = np.int64(indices[n, d])
            if v < 0 or v >= shape[d]:
                valid = False
            if n > 0:
                diff = v - np.int64(indices[n - 1, d])
                if diff > 0:
                    different = True
                if not different and diff < 0:
                    increasing = False
        if not valid:
            set_error(err, "indices[", n, "] = ", indices[n], " is out of bounds: need 0 <= index < ", shape)
            return
        if not increasing:
            set_error(err, "indices[", n, "] = ", indices[n], _ORDER_HELP)
            return
        if not different:
            set_error(err, "indices[", n, "] = ", indices[n], " is repeated")
            return


@njit(cache=True, nogil=True)
def sparse_to_dense(indices, output_shape, values, values_scalar, default_value, validate, err):
    n, ndims = indices.shape[0], indices.shape[1]
    empty = np.empty(0, values.dtype)
    if not values_scalar and values.shape[0] != n:
        set_error(err, "sparse_values has incorrect shape [", values.shape[0], "], should be [] or [", n, "]")
        return empty, output_shape.astype(np.int64)
    if output_shape.shape[0] != ndims:
        set_error(err, "output_shape has incorrect number of elements: ", output_shape.shape[0], " should be: ",
                  ndims)
        return empty, output_shape.astype(np.int64)
    shape = checked_dims(output_shape, err)
    if err[0] != 0:
        return empty, shape
    if validate:
        _first_invalid(indices, shape, err)
        if err[0] != 0:
            return empty, shape
    size = 1
    for d in range(ndims):
        size *= shape[d]
    try:
        out = np.full(size, default_value[0], values.dtype)
    except Exception:
        out_of_memory(err, shape)
        return empty, shape
    for i in range(n):
        flat = 0
        for d in range(ndims):
            v = np.int64(indices[i, d])
            if v < 0 or v >= shape[d]:
                set_error(err, "Indices are not valid (out of bounds).  Shape: ", shape)
                return empty, shape
            flat = flat * shape[d] + v
        out[flat] = values[0] if values_scalar else values[i]
    return out, shape

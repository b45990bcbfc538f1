"""Slice and StridedSlice. Both resolve to per-dimension index ranges first (TF's canonical form),
then copy; only ranks 1 and 2 occur in feature-column graphs and are supported here.
"""
import numpy as np
from numba import njit

from .errors import int_text, set_error


@njit(cache=True, nogil=True)
def slice_bounds(shape, begin, size, err):
    """Slice: per dimension (start, stop, stride 1, 0); size -1 means "to the end"."""
    rank = shape.shape[0]
    out = np.zeros((rank, 4), np.int64)
    if begin.shape[0] != rank or size.shape[0] != rank:
        set_error(err, "Expected begin and size arguments to be 1-D tensors of size " + str(rank))
        return out
    for d in range(rank):
        b = np.int64(begin[d])
        s = np.int64(size[d])
        dim = shape[d]
        if b < 0 or b > dim:
            set_error(err, "Expected begin[" + str(d) + "] in [0, " + str(dim) + "], but got " + int_text(b))
            return out
        if s == -1:
            s = dim - b
        if s < 0 or s > dim - b:  # not b + s > dim: that sum can overflow
            set_error(err, "Expected size[" + str(d) + "] in [0, " + str(dim - b) + "], but got " + int_text(s))
            return out
        out[d, 0] = b
        out[d, 1] = b + s
        out[d, 2] = 1
    return out


@njit(cache=True, nogil=True)
def shrunk_shape(bounds):
    """Output shape of a StridedSlice: dims with the shrink flag (column 3) are dropped."""
    n = 0
    for d in range(bounds.shape[0]):
        if bounds[d, 3] == 0:
            n += 1
    out = np.empty(n, np.int64)
    k = 0
    for d in range(bounds.shape[0]):
        if bounds[d, 3] == 0:
            out[k] = _count(bounds[d, 0], bounds[d, 1], bounds[d, 2])
            k += 1
    return out


@njit(cache=True, nogil=True)
def strided_slice_bounds(shape, begin, end, strides, begin_mask, end_mask, shrink_mask, err):
    """StridedSlice without ellipsis/new-axis masks: per dimension (start, stop, stride, shrink)."""
    rank = shape.shape[0]
    out = np.zeros((rank, 4), np.int64)
    n_spec = begin.shape[0]
    if end.shape[0] != n_spec or strides.shape[0] != n_spec:
        set_error(err, "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [" + str(n_spec) + "], [" + str(end.shape[0]) + "], and [" + str(strides.shape[0]) + "] instead.")
        return out
    if n_spec > rank:
        set_error(err, "Index out of range using input dim " + str(n_spec - 1) + "; input has only " + str(rank) + " dims")
        return out
    for d in range(rank):
        dim = shape[d]
        if d >= n_spec:
            out[d, 0] = 0
            out[d, 1] = dim
            out[d, 2] = 1
            continue
        st = np.int64(strides[d])
        if st == 0:
            set_error(err, "strides[" + str(d) + "] must be non-zero")
            return out
        if (shrink_mask >> d) & 1:  # begin_mask / end_mask do not apply
            if st < 0:
                set_error(err, "only stride 1 allowed on non-range indexing.")
                return out
            b = np.int64(begin[d])
            if b < 0:
                b += dim
            if b < 0 or b >= dim:
                set_error(err, "slice index " + int_text(b) + " of dimension " + str(d) + " out of bounds.")
                return out
            out[d, 0] = b
            out[d, 1] = b + 1
            out[d, 2] = 1
            out[d, 3] = 1
            continue
        lo = 0 if st > 0 else -1
        hi = dim if st > 0 else dim - 1
        if (begin_mask >> d) & 1:
            b = 0 if st > 0 else dim - 1
        else:
            b = np.int64(begin[d])
            if b < 0:
                b += dim
            b = min(max(b, lo), hi)
        if (end_mask >> d) & 1:
            e = dim if st > 0 else -1
        else:
            e = np.int64(end[d])
            if e < 0:
                e += dim
            e = min(max(e, lo), hi)
        out[d, 0] = b
        out[d, 1] = e
        out[d, 2] = st
    return out


@njit(cache=True, nogil=True)
def _count(b, e, st):
    """Elements in range(b, e, st); b and e are clamped dims, st any non-zero int64 (no overflow)."""
    span = e - b if st > 0 else b - e
    if span <= 0:
        return 0
    if st >= span or st <= -span:
        return 1
    return (span - 1) // (st if st > 0 else -st) + 1


@njit(cache=True, nogil=True)
def take_1d(x, bounds):
    b, e, st = bounds[0, 0], bounds[0, 1], bounds[0, 2]
    n = _count(b, e, st)
    out = np.empty(n, x.dtype)
    for i in range(n):
        out[i] = x[b + i * st]
    return out


@njit(cache=True, nogil=True)
def take_2d(x, bounds):
    b0, e0 = bounds[0, 0], bounds[0, 1]
    b1, e1 = bounds[1, 0], bounds[1, 1]
    s0, s1 = bounds[0, 2], bounds[1, 2]
    n0 = _count(b0, e0, s0)
    n1 = _count(b1, e1, s1)
    out = np.empty((n0, n1), x.dtype)
    for i in range(n0):
        for j in range(n1):
            out[i, j] = x[b0 + i * s0, b1 + j * s1]
    return out

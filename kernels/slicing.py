"""Slice and StridedSlice. Both resolve to per-dimension index ranges first (TF's canonical form),
then copy, for any rank >= 1.
"""
import numpy as np
from numba import njit

from .errors import multiply_sizes, out_of_memory, set_error


@njit(cache=True, nogil=True)
def slice_bounds(shape, begin, size, err):
    """Slice: per dimension (start, stop, stride 1, 0); size -1 means "to the end"."""
    rank = shape.shape[0]
    out = np.zeros((rank, 4), np.int64)
    if begin.shape[0] != rank or size.shape[0] != rank:
        set_error(err, "Expected begin and size arguments to be 1-D tensors of size ", rank)
        return out
    elements = np.int64(1)
    wrapped = False
    for d in range(rank):
        b = np.int64(begin[d])
        s = np.int64(size[d])
        dim = shape[d]
        if s == -1:
            s = dim - b
        if dim == 0:
            if b != 0 or s != 0:
                set_error(err, "Expected begin[", d, "] == 0 (got ", b, ") and size[", d, "] == 0 (got ", s,
                          ") when input.dim_size(", d, ") == 0")
                return out
        elif b < 0 or b > dim:
            set_error(err, "Expected begin[", d, "] in [0, ", dim, "], but got ", b)
            return out
        elif s < 0 or np.int64(np.uint64(b) + np.uint64(s)) > dim:  # TF's check, its sum wrapping
            set_error(err, "Expected size[", d, "] in [0, ", dim - b, "], but got ", s)
            return out
        elements = multiply_sizes(elements, s, err)
        if elements < 0:
            return out
        wrapped = wrapped or s > dim - b
        out[d, 0] = b
        out[d, 1] = b + s
        out[d, 2] = 1
    if wrapped and elements > 0:  # b + s wrapped past TF's check: it then fails to allocate s
        sizes = np.empty(rank, np.int64)
        for d in range(rank):
            sizes[d] = out[d, 1] - out[d, 0]
        out_of_memory(err, sizes)
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
        set_error(err, "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [", n_spec,
                  "], [", end.shape[0], "], and [", strides.shape[0], "] instead.")
        return out
    if n_spec > rank:
        set_error(err, "Index out of range using input dim ", n_spec - 1, "; input has only ", rank, " dims")
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
            set_error(err, "strides[", d, "] must be non-zero")
            return out
        if (shrink_mask >> d) & 1:  # begin_mask / end_mask do not apply
            if st < 0:
                set_error(err, "only stride 1 allowed on non-range indexing.")
                return out
            b = np.int64(begin[d])
            if b < 0:
                b += dim
            if b < 0 or b >= dim:
                set_error(err, "slice index ", b, " of dimension ", d, " out of bounds.")
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
def take(x, bounds):
    """The elements of ``x`` (any rank >= 1) in the per-dimension ranges of ``bounds``, flat in C
    order; ``shrunk_shape(bounds)`` gives their shape. The last dimension is the inner loop."""
    c = np.ascontiguousarray(x)
    rank = c.ndim
    src = c.reshape(c.size)
    counts = np.empty(rank, np.int64)
    step = np.empty(rank, np.int64)  # elements between neighbours along each dim of x
    total = 1
    s = 1
    for d in range(rank - 1, -1, -1):
        counts[d] = _count(bounds[d, 0], bounds[d, 1], bounds[d, 2])
        total *= counts[d]
        step[d] = s
        s *= c.shape[d]
    out = np.empty(total, c.dtype)
    if total == 0:
        return out
    last = rank - 1
    b_last, s_last, n_last = bounds[last, 0], bounds[last, 2], counts[last]
    at = np.zeros(rank, np.int64)  # position among the outer dims' selected indices
    for k in range(0, total, n_last):
        base = b_last
        for d in range(last):
            base += (bounds[d, 0] + at[d] * bounds[d, 2]) * step[d]
        for j in range(n_last):
            out[k + j] = src[base + j * s_last]
        for d in range(last - 1, -1, -1):  # the next outer position, C order
            at[d] += 1
            if at[d] < counts[d]:
                break
            at[d] = 0
    return out


@njit(cache=True, nogil=True)
def with_new_axes(shape, new_axes):
    """``shape`` with a 1 at each output position of ``new_axes`` (sorted): StridedSlice's new axes."""
    out = np.empty(shape.shape[0] + new_axes.shape[0], np.int64)
    j = 0
    k = 0
    for i in range(out.shape[0]):
        if k < new_axes.shape[0] and new_axes[k] == i:
            out[i] = 1
            k += 1
        else:
            out[i] = shape[j]
            j += 1
    return out

"""Elementwise families: broadcasting binary ops (comparisons, arithmetic), Select, casts, fills.

``broadcast_shape`` validates first, so NumPy-style broadcasting inside Numba never raises.
"""
import numpy as np
from numba import njit

from .errors import dims_text, set_error
from .strings import string_at


@njit(cache=True, nogil=True)
def broadcast_shape(a_shape, b_shape, a_rank, b_rank, err):
    """TF/NumPy broadcast of two shapes given as tuples plus true ranks (scalars travel as (1,))."""
    rank = max(a_rank, b_rank)
    out = np.ones(rank, np.int64)
    for i in range(rank):
        da = a_shape[a_rank - 1 - i] if i < a_rank else 1
        db = b_shape[b_rank - 1 - i] if i < b_rank else 1
        if da != db and da != 1 and db != 1:
            set_error(err, "Incompatible shapes: dimension " + str(rank - 1 - i) + " is " + str(da) + " vs. " + str(db))
            return out
        out[rank - 1 - i] = max(da, db) if da != 0 and db != 0 else 0
    return out


@njit(cache=True, nogil=True)
def _split_axis(dims, shape):
    """(k, trailing) when ``dims`` (aligned to ``shape``) are ones before axis k and shape's from
    there (trailing True), or shape's before k and ones from there (trailing False); else (-1, _)."""
    r = shape.shape[0]
    k = 0
    while k < r and dims[k] == 1:
        k += 1
    trailing = True
    for i in range(k, r):
        trailing = trailing and dims[i] == shape[i]
    if trailing:
        return k, True
    k = 0
    while k < r and dims[k] == shape[k]:
        k += 1
    for i in range(k, r):
        if dims[i] != 1:
            return -1, False
    return k, False


@njit(cache=True, nogil=True)
def _aligned(dims, rank):
    """``dims`` with leading ones to ``rank`` (a scalar's (1,) aligns to nothing)."""
    out = np.ones(rank, np.int64)
    for i in range(min(len(dims), rank)):
        out[rank - 1 - i] = dims[len(dims) - 1 - i]
    return out


@njit(cache=True, nogil=True)
def _as_2d(x, shape, k, role):
    """x as an operand of a [rows, cols] broadcast split at axis k: the whole of it (role 0), a
    trailing block repeated over rows (1) or one value per row (2)."""
    rows, cols = 1, 1
    for i in range(shape.shape[0]):
        if i < k:
            rows *= shape[i]
        else:
            cols *= shape[i]
    if role == 0:
        return x.reshape((rows, cols))
    return x.reshape((1, cols)) if role == 1 else x.reshape((rows, 1))


@njit(cache=True, nogil=True)
def flat_pair(a, b, shape):
    """a and b as 2-D arrays whose broadcast, reshaped to ``shape`` (theirs, from broadcast_shape),
    is a and b's. Numba's own N-D broadcast indexes every element: a [4096, 5, 16] mask multiply
    ran 6x slower than a loop, and a same-shape [20480, 16] multiply 4x slower than on the flat
    arrays. Views where the broadcast splits at one axis (same shapes, a scalar, a row or column
    repeated, an outer product); an operand repeated along a middle axis is copied out whole."""
    n = 1
    for i in range(shape.shape[0]):
        n *= shape[i]
    x, y = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if (x.size == n and y.size == n) or x.size == 1 or y.size == 1:
        return x.reshape((1, x.size)), y.reshape((1, y.size))
    r = shape.shape[0]
    ad, bd = _aligned(x.shape, r), _aligned(y.shape, r)
    ka, ta = _split_axis(ad, shape)
    kb, tb = _split_axis(bd, shape)
    if x.size == n and kb >= 0:
        return _as_2d(x, shape, kb, 0), _as_2d(y, shape, kb, 1 if tb else 2)
    if y.size == n and ka >= 0:
        return _as_2d(x, shape, ka, 1 if ta else 2), _as_2d(y, shape, ka, 0)
    if ka >= 0 and ka == kb and ta != tb:  # an outer product: [rows, 1] against [1, cols]
        return _as_2d(x, shape, ka, 1 if ta else 2), _as_2d(y, shape, kb, 1 if tb else 2)
    return _broadcast_flat(x, ad, shape, n), _broadcast_flat(y, bd, shape, n)  # a middle axis repeated


@njit(cache=True, nogil=True)
def _broadcast_flat(x, dims, shape, n):
    """x (dims aligned to shape) broadcast to shape, as a [1, n] copy: the rare broadcasts that do
    not split at one axis."""
    strides = np.zeros(shape.shape[0], np.int64)
    step = 1
    for i in range(shape.shape[0] - 1, -1, -1):
        strides[i] = step if dims[i] != 1 else 0
        step *= dims[i]
    flat = x.reshape(x.size)
    out = np.empty((1, n), x.dtype)
    for f in range(n):
        rest, at = f, 0
        for i in range(shape.shape[0] - 1, -1, -1):
            at += (rest % shape[i]) * strides[i]
            rest //= shape[i]
        out[0, f] = flat[at]
    return out


@njit(cache=True, nogil=True)
def check_divisors(a_size, b, err):
    """TF's integer FloorMod/FloorDiv refuse a zero divisor, unless the output is empty."""
    if a_size == 0:
        return
    flat = b.ravel()
    for i in range(flat.shape[0]):
        if flat[i] == 0:
            set_error(err, "Integer division by zero")
            return


@njit(cache=True, nogil=True)
def select_rows(cond, t, e, err=None):
    """Select (v1) with a vector condition picking whole rows of t / e (2-D views of them).

    TF requires len(cond) == len(t) and t, e of one shape. On a mismatch the message goes to
    ``err`` when one is given; either way ``e`` comes back unchanged, never a write out of bounds.
    """
    out = np.ascontiguousarray(e).copy()
    same = _same_shape(t.shape, e.shape)
    if cond.shape[0] != t.shape[0] or not same:
        if err is not None:  # in TF's order
            if cond.shape[0] != t.shape[0]:
                set_error(err, "Number of batches of 'then' must match size of 'cond', but saw: " + str(t.shape[0]) + " vs. " + str(cond.shape[0]))
            else:
                set_error(err, "'then' and 'else' must have the same size.  but received: " + dims_text(t.shape) + " vs. " + dims_text(e.shape))
        return out
    src = np.ascontiguousarray(t)
    flat_out = out.reshape((out.shape[0], out.size // out.shape[0] if out.shape[0] else 0))
    flat_src = src.reshape(flat_out.shape)
    for i in range(cond.shape[0]):  # scalar loops: a row view per element costs two atomics
        if cond[i]:
            for c in range(flat_out.shape[1]):
                flat_out[i, c] = flat_src[i, c]
    return out


@njit(cache=True, nogil=True)
def _same_shape(a, b):
    if len(a) != len(b):
        return False
    for d in range(len(a)):
        if a[d] != b[d]:
            return False
    return True


@njit(cache=True, nogil=True)
def select_scalar(cond, t, e, err):
    """Select (v1) with a scalar condition (its one element): all of ``t`` or all of ``e``, which
    must have one shape (t and e of one rank). Select does not broadcast."""
    if not _same_shape(t.shape, e.shape):
        set_error(err, "'then' and 'else' must have the same size.  but received: " + dims_text(t.shape) + " vs. " + dims_text(e.shape))
    return t if cond.ravel()[0] else e


@njit(cache=True, nogil=True)
def check_select_shapes(cond, t, e, err):
    """Select (v1) elementwise: the three inputs (of one rank) must have one shape."""
    for i, other in ((1, t.shape), (2, e.shape)):
        if not _same_shape(cond.shape, other):
            set_error(err, "Inputs to operation of type Select must have the same size and shape.  Input 0: "
                      + dims_text(cond.shape) + " != input " + str(i) + ": " + dims_text(other))
            return


@njit(cache=True, nogil=True)
def _broadcastable(a, b):
    for i in range(min(a.shape[0], b.shape[0])):
        da, db = a[a.shape[0] - 1 - i], b[b.shape[0] - 1 - i]
        if da != db and da != 1 and db != 1:
            return False
    return True


@njit(cache=True, nogil=True)
def check_select_v2(cond, t, e, cond_rank, t_rank, e_rank, err):
    """SelectV2's three shapes must broadcast together (pairwise is enough: each dim's sizes
    other than 1 then agree). Ranks are the true ones (a scalar travels as (1,))."""
    c = np.array(cond.shape)[:cond_rank]
    a = np.array(t.shape)[:t_rank]
    b = np.array(e.shape)[:e_rank]
    if not (_broadcastable(c, a) and _broadcastable(c, b) and _broadcastable(a, b)):
        set_error(err, "condition " + dims_text(c) + ", then " + dims_text(a) + ", and else " + dims_text(b)
                  + " must be broadcastable")


@njit(cache=True, nogil=True)
def string_equals_const(ids, off, dat, const_bytes):
    """Equal(strings, constant string): compares bytes without building Python strings."""
    flat = np.ascontiguousarray(ids).ravel()
    out = np.empty(flat.shape[0], np.bool_)
    n = const_bytes.shape[0]
    for i in range(flat.shape[0]):
        buf, start, length = string_at(off, dat, flat[i])
        same = length == n
        j = 0
        while same and j < n:
            same = buf[start + j] == const_bytes[j]
            j += 1
        out[i] = same
    return out.reshape(ids.shape)


@njit(cache=True, nogil=True)
def select_same_shape(cond, t, e):
    """Select / SelectV2 whose three inputs already have one shape (the feature-column case)."""
    c = np.ascontiguousarray(cond).ravel()
    a = np.ascontiguousarray(t).ravel()
    b = np.ascontiguousarray(e).ravel()
    out = np.empty(a.shape[0], a.dtype)
    for i in range(a.shape[0]):
        out[i] = a[i] if c[i] else b[i]
    return out.reshape(t.shape)

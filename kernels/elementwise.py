"""Elementwise families: broadcasting binary ops (comparisons, arithmetic), Select, casts, fills.

``broadcast_shape`` validates first, so NumPy-style broadcasting inside Numba never raises.
"""
import numpy as np
from numba import njit

from .errors import set_error
from .strings import string_at


@njit(cache=True, nogil=True)
def _true_shape(shape, rank):
    """A shape tuple as an array of its true rank (a scalar's travels as (1,)), for messages."""
    out = np.empty(rank, np.int64)
    for k in range(rank):
        out[k] = shape[k]
    return out


@njit(cache=True, nogil=True)
def broadcast_shape(a_shape, b_shape, a_rank, b_rank, err):
    """TF/NumPy broadcast of two shapes given as tuples plus true ranks (scalars travel as (1,))."""
    rank = max(a_rank, b_rank)
    out = np.ones(rank, np.int64)
    for i in range(rank):
        da = a_shape[a_rank - 1 - i] if i < a_rank else 1
        db = b_shape[b_rank - 1 - i] if i < b_rank else 1
        if da != db and da != 1 and db != 1:
            set_error(err, "Incompatible shapes: ", _true_shape(a_shape, a_rank), " vs. ", _true_shape(b_shape, b_rank))
            return out
        out[rank - 1 - i] = max(da, db) if da != 0 and db != 0 else 0
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
                set_error(err, "Number of batches of 'then' must match size of 'cond', but saw: ", t.shape[0],
                          " vs. ", cond.shape[0])
            else:
                set_error(err, "'then' and 'else' must have the same size.  but received: ", t.shape, " vs. ",
                          e.shape)
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
        set_error(err, "'then' and 'else' must have the same size.  but received: ", t.shape, " vs. ", e.shape)
    return t if cond.ravel()[0] else e


@njit(cache=True, nogil=True)
def check_select_shapes(cond, t, e, err):
    """Select (v1) elementwise: the three inputs (of one rank) must have one shape."""
    for i, other in ((1, t.shape), (2, e.shape)):
        if not _same_shape(cond.shape, other):
            set_error(err, "Inputs to operation of type Select must have the same size and shape.  Input 0: ",
                      cond.shape, " != input ", i, ": ", other)
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
        set_error(err, "condition ", c, ", then ", a, ", and else ", b, " must be broadcastable")


@njit(cache=True, nogil=True)
def broadcast_strides(dims, rank):
    """Element strides of a C-ordered array of shape ``dims`` broadcast to ``rank`` dims
    (right-aligned): 0 for a dim of size 1 or one it lacks, which the output repeats."""
    strides = np.zeros(rank, np.int64)
    step = 1
    for d in range(len(dims) - 1, -1, -1):
        if dims[d] != 1:
            strides[rank - len(dims) + d] = step
        step *= dims[d]
    return strides


@njit(cache=True, nogil=True)
def select_broadcast(cond, t, e):
    """(flat, shape): SelectV2 of inputs that check_select_v2 found broadcastable, broadcast as
    NumPy does (right-aligned; a scalar travels as (1,)). A library kernel, cached on disk:
    Numba's broadcasting np.where compiled again in every process that typed one, 1.0-1.3 s a
    signature."""
    rank = max(cond.ndim, t.ndim, e.ndim)
    shape = np.ones(rank, np.int64)
    dims_c, dims_t, dims_e = np.array(cond.shape), np.array(t.shape), np.array(e.shape)
    for dims in (dims_c, dims_t, dims_e):
        for d in range(dims.shape[0]):
            if dims[d] != 1:  # 0 included: broadcastable means every other size there is 0 or 1
                shape[rank - dims.shape[0] + d] = dims[d]
    n = 1
    for d in range(rank):
        n *= shape[d]
    out = np.empty(n, t.dtype)
    c, a, b = np.ascontiguousarray(cond).ravel(), np.ascontiguousarray(t).ravel(), np.ascontiguousarray(e).ravel()
    sc, sa, sb = broadcast_strides(dims_c, rank), broadcast_strides(dims_t, rank), broadcast_strides(dims_e, rank)
    index = np.zeros(rank, np.int64)
    ic = ia = ib = 0
    for i in range(n):
        out[i] = a[ia] if c[ic] else b[ib]
        d = rank - 1
        while d >= 0:  # the next output element's index, and where each input has it
            index[d] += 1
            ic += sc[d]
            ia += sa[d]
            ib += sb[d]
            if index[d] < shape[d]:
                break
            ic -= sc[d] * shape[d]
            ia -= sa[d] * shape[d]
            ib -= sb[d] * shape[d]
            index[d] = 0
            d -= 1
    return out, shape


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

"""BroadcastArgs and BroadcastTo: TF's BCast rule (dims aligned from the right; equal, or one of
them 1) with TF's checks, in TF's order (BroadcastTo: the shape, the ranks, the allocation, then
the broadcast, checked for empty outputs too)."""
import numpy as np
from numba import njit
from numba.cpython.unsafe.tuple import tuple_setitem

from .elementwise import broadcast_strides
from .errors import out_of_memory, set_error
from .fill import checked_dims
from .strings import copy_run


@njit(cache=True, nogil=True)
def broadcast_args(s0, s1, err):
    n = max(s0.shape[0], s1.shape[0])
    out = np.empty(n, s0.dtype)
    for i in range(n):  # i-th dim from the right
        a = s0[s0.shape[0] - 1 - i] if i < s0.shape[0] else 1
        b = s1[s1.shape[0] - 1 - i] if i < s1.shape[0] else 1
        if a == b or b == 1:
            out[n - 1 - i] = a
        elif a == 1:
            out[n - 1 - i] = b
        else:
            set_error(err, "Incompatible shapes: ", s0, " vs. ", s1)
            return out
    return out


@njit(cache=True, nogil=True)
def broadcast_to(x, shape, like, err):
    """x broadcast to ``shape`` (int32/int64 vector); ``like``: an empty array of the output's
    static rank, whose shape tuple becomes the output's. A scalar ``x`` may come as a one-element
    vector (generated code's scalars): it broadcasts the same."""
    dims = checked_dims(shape, err)
    if err[0] != 0:
        return np.empty_like(like)
    rank = like.ndim
    out_shape = like.shape
    padded = like.shape  # x's shape with 1s in front, to the output's rank
    for i in range(rank):
        out_shape = tuple_setitem(out_shape, i, dims[i] if i < dims.shape[0] else 0)
        padded = tuple_setitem(padded, i, 1)
    same = dims.shape[0] == x.ndim
    for i in range(x.ndim):
        padded = tuple_setitem(padded, rank - x.ndim + i, x.shape[i])
        same = same and x.shape[i] == dims[i]
    if same:  # TF forwards the input
        return x.reshape(out_shape).copy()
    if x.ndim > dims.shape[0] or dims.shape[0] != rank:
        set_error(err, "Rank of input (", x.ndim, ") must be no greater than rank of output shape (", dims.shape[0],
                  ").")
        return np.empty_like(like)
    try:
        out = np.empty(out_shape, x.dtype)
    except Exception:
        out_of_memory(err, dims)
        return np.empty_like(like)
    joint = broadcast_args(np.array(x.shape, np.int64), dims, err)  # TF's "Incompatible shapes"
    if err[0] != 0:
        return out
    for i in range(rank):
        if joint[i] != dims[i]:
            set_error(err, "Unable to broadcast tensor of shape ", x.shape, " to tensor of shape ", dims)
            return out
    # Rows of the last dim, an odometer over the others, x's strides 0 where it repeats:
    # np.broadcast_to and a slice assignment compiled Numba's broadcasting helpers and its
    # shape-mismatch message (~2 s, tests/test_compile_once.py)
    src, flat = np.ascontiguousarray(x).ravel(), out.reshape(out.size)
    if flat.shape[0] == 0:
        return out
    strides = broadcast_strides(np.array(padded, np.int64), rank)
    index = np.zeros(rank, np.int64)
    inner, step = out_shape[rank - 1], strides[rank - 1]
    at = 0
    for row in range(0, flat.shape[0], inner):
        # A fill or a copy, each vectorised (not with the stride a variable; copy_run says how)
        if step == 0:
            flat[row:row + inner] = src[at]
        else:
            copy_run(flat, row, src, at, inner)
        d = rank - 2
        while d >= 0:
            index[d] += 1
            at += strides[d]
            if index[d] < out_shape[d]:
                break
            at -= strides[d] * out_shape[d]
            index[d] = 0
            d -= 1
    return out

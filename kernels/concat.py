"""ConcatV2: every part viewed as [outer, width_i]; rows are laid side by side."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def mismatch(err, d, first, k, other):
    """TF's error for input ``k`` (shape ``other``) differing from input 0 (``first``) in dim ``d``."""
    set_error(err, "ConcatOp : Dimension ", d, " in both shapes must be equal: shape[0] = ", first, " vs. shape[", k,
              "] = ", other)


@njit(cache=True, nogil=True)
def concat_shape(parts, axis, err):
    """Checks ``parts`` (a tuple of arrays) as TF does; returns (output shape vector, outer,
    total width): the output viewed as [outer, total width]."""
    first = parts[0]
    rank = first.ndim
    shape = np.empty(rank, np.int64)
    if axis < 0 or axis >= rank:  # the lowering has already added rank to a negative axis
        set_error(err, "ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ", rank,
                  "), but got ", axis)
        return shape, 0, 0
    for d in range(rank):
        shape[d] = first.shape[d]
    shape[axis] = 0
    outer = 1
    for d in range(axis):
        outer *= first.shape[d]
    total = 0
    for k in range(len(parts)):
        p = parts[k]
        for d in range(rank):
            if d != axis and p.shape[d] != first.shape[d]:
                mismatch(err, d, first.shape, k, p.shape)
                return shape, 0, 0
        shape[axis] += p.shape[axis]
        total += p.size // outer if outer > 0 else 0
    return shape, outer, total


@njit(cache=True, nogil=True)
def concat_into(parts, out):
    """Lays every part, viewed as [outer, width], side by side in ``out`` ([outer, total])."""
    outer = out.shape[0]
    col = 0
    for k in range(len(parts)):
        p = np.ascontiguousarray(parts[k])
        w = p.size // outer if outer > 0 else 0
        out[:, col:col + w] = p.reshape((outer, w))
        col += w


@njit(cache=True, nogil=True)
def concat(parts, axis, err):
    """Returns (out as [outer, total_width], output shape vector). ``parts`` is a tuple of arrays."""
    shape, outer, total = concat_shape(parts, axis, err)
    out = np.empty((outer, total), parts[0].dtype)
    if err[0] == 0:
        concat_into(parts, out)
    return out, shape


@njit(cache=True, nogil=True)
def check_same_shape(first, other, index, err):
    """Pack's check that input ``index`` has the shape of input 0, in TF's words."""
    if first.shape[0] != other.shape[0] or np.any(first != other):
        set_error(err, "Shapes of all inputs must match: values[0].shape = ", first, " != values[", index,
                  "].shape = ", other)

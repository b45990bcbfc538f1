"""Cumsum(x, axis, exclusive, reverse): each line along ``axis`` summed left to right (right to
left when ``reverse``) in x's own dtype, as Eigen's scan does on CPU, so floats match TF bit for
bit and integers wrap as TF's do. ``axis``: a one-element vector (generated code's scalars); x
has rank 1 or more (a scalar's error stays TF's)."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def cumsum(x, axis, exclusive, reverse, err):
    rank = x.ndim
    a = np.int64(axis[0])
    if a < 0:
        a += rank
    out = np.empty_like(x)
    if not 0 <= a < rank:
        set_error(err, "ScanOp: Expected scan axis in the range [", -rank, ", ", rank, "), but got ", a)
        return out
    outer, inner = 1, 1
    for d in range(rank):
        if d < a:
            outer *= x.shape[d]
        elif d > a:
            inner *= x.shape[d]
    n = x.shape[a]
    lines = np.ascontiguousarray(x).reshape((outer, n, inner))
    sums = out.reshape((outer, n, inner))  # out is C-contiguous: a view
    acc = np.empty(inner, x.dtype)  # x's dtype: every partial sum rounds (or wraps) as TF's
    for o in range(outer):
        acc[:] = 0
        for step in range(n):
            k = n - 1 - step if reverse else step
            for j in range(inner):
                if exclusive:
                    sums[o, k, j] = acc[j]
                    acc[j] += lines[o, k, j]
                else:
                    acc[j] += lines[o, k, j]
                    sums[o, k, j] = acc[j]
    return out

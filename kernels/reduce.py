"""Sum / Prod / Max / Min / Mean / Any / All over the last axis of a [rows, n] view.

The lowering transposes the reduced axes to the end, so every reduction is a row reduction here.
Integers wrap as TF's do (the accumulator keeps the input's dtype). Float sums run in row order,
which differs from Eigen's vectorised tree order in the last bits (a float reduction's stated
tolerance); Max/Min propagate NaN as TF's CPU kernels do.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def reduce_sum(x):
    out = np.zeros(x.shape[0], x.dtype)
    if x.shape[1] == 1:  # TF reduces nothing over size-1 axes: a copy, -0.0 stays -0.0
        for i in range(x.shape[0]):
            out[i] = x[i, 0]
        return out
    for i in range(x.shape[0]):
        acc = out[i]
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def reduce_prod(x):
    out = np.ones(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        acc = out[i]
        for j in range(x.shape[1]):
            acc *= x[i, j]
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def _extreme(x, start, is_max):
    out = np.full(x.shape[0], start, x.dtype)
    for i in range(x.shape[0]):
        acc = out[i]
        for j in range(x.shape[1]):
            v = x[i, j]
            if (v > acc if is_max else v < acc) or v != v:  # NaN sticks: nothing beats it
                acc = v
            if acc != acc:
                break
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def reduce_max(x, lowest):
    """``lowest``: what an empty row gives (-inf, or the integer type's minimum)."""
    return _extreme(x, lowest, True)


@njit(cache=True, nogil=True)
def reduce_min(x, highest):
    return _extreme(x, highest, False)


@njit(cache=True, nogil=True)
def reduce_mean(x, is_float):
    """Float: sum / n (an empty row is NaN, TF's 0/0). Integer: the sum in int64 (TF's mean of
    int32 does not wrap) divided by n, truncating toward zero as C++ does; an empty row gives 0."""
    n = x.shape[1]
    out = np.zeros(x.shape[0], x.dtype)
    if is_float:
        sums = reduce_sum(x)
        for i in range(sums.shape[0]):
            # in float64, rounded once: the same as float32's own division
            out[i] = sums[i] / n if n > 0 else np.nan
        return out
    if n == 0:
        return out
    for i in range(x.shape[0]):
        s = np.int64(0)
        for j in range(n):
            s += np.int64(x[i, j])
        q = s // n
        if q < 0 and q * n != s:
            q += 1
        out[i] = q
    return out


@njit(cache=True, nogil=True)
def reduce_any(x):
    out = np.zeros(x.shape[0], np.bool_)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j]:
                out[i] = True
                break
    return out


@njit(cache=True, nogil=True)
def reduce_all(x):
    out = np.ones(x.shape[0], np.bool_)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if not x[i, j]:
                out[i] = False
                break
    return out

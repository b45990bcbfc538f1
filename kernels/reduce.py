"""Sum / Prod / Max / Min / Mean / Any / All over the last axis of a [rows, n] view.

The lowering transposes the reduced axes to the end, so every reduction is a row reduction here.
Integers wrap as TF's do (the accumulator keeps the input's dtype). Max/Min propagate NaN as TF's
CPU kernels do.

Float sums, products and means (a sum divided once) over a tensor's innermost axes go in the order of
TF's Eigen reduction (InnerMostDimReducer with the AVX packets of TF's x86-64 wheels: ``lanes``
8 float32 or 4 float64), so the bits equal TF's. Blocks of 4 packets go to 4 packet
accumulators, which are then added into the first; the remaining whole packets go to the
first; the leftover scalars are summed apart; the result is those scalars plus the first
accumulator's lanes, added halves to halves. Rows longer than ``lanes * EIGEN_LEAF`` (where
Eigen splits a row into a tree at packet-aligned points of the whole tensor) and other
reductions add left to right, which differs from TF's order in the last bits (a float
reduction's stated tolerance).
"""
import numpy as np
from numba import njit


EIGEN_LEAF = 1024  # Eigen's LeafSize for float and double: longer rows are split into a tree


@njit(cache=True, nogil=True, inline="always")
def _combine(a, b, prod):
    return a * b if prod else a + b


@njit(cache=True, nogil=True, inline="always")  # inlined: ``prod`` is a constant at each caller
def _rows(x, lanes, prod):
    """Row sums (``prod``: products); ``lanes`` > 0: in TF's Eigen order for that packet width
    (module doc), which Eigen's sum and product reducers share."""
    out = np.ones(x.shape[0], x.dtype) if prod else np.zeros(x.shape[0], x.dtype)
    n = x.shape[1]
    if n == 1:  # TF reduces nothing over size-1 axes: a copy, -0.0 stays -0.0
        for i in range(x.shape[0]):
            out[i] = x[i, 0]
        return out
    if lanes > 0 and n <= lanes * EIGEN_LEAF:  # one loop nest: a helper per row costs refcounts
        acc = np.empty((4, lanes), x.dtype)
        block = 4 * lanes
        blocks_end = (n // block) * block
        packets_end = (n // lanes) * lanes
        for i in range(x.shape[0]):
            acc[:] = out[i]  # the reducer's identity
            for j in range(0, blocks_end, block):
                for a in range(4):
                    for k in range(lanes):
                        acc[a, k] = _combine(acc[a, k], x[i, j + a * lanes + k], prod)
            for a in range(1, 4):
                for k in range(lanes):
                    acc[0, k] = _combine(acc[0, k], acc[a, k], prod)
            for j in range(blocks_end, packets_end, lanes):
                for k in range(lanes):
                    acc[0, k] = _combine(acc[0, k], x[i, j + k], prod)
            rest = out[i]
            for j in range(packets_end, n):
                rest = _combine(rest, x[i, j], prod)
            half = lanes // 2
            while half > 0:  # the packet's horizontal reduction: halves with halves
                for k in range(half):
                    acc[0, k] = _combine(acc[0, k], acc[0, k + half], prod)
                half //= 2
            out[i] = _combine(rest, acc[0, 0], prod)
        return out
    for i in range(x.shape[0]):
        acc = out[i]
        for j in range(x.shape[1]):
            acc = _combine(acc, x[i, j], prod)
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def reduce_sum(x, lanes):
    """Row sums; ``lanes`` > 0: in TF's Eigen order for that packet width (module doc)."""
    return _rows(x, lanes, False)


@njit(cache=True, nogil=True)
def reduce_prod(x, lanes):
    """Row products, in the order reduce_sum adds (integers wrap: any order gives their bits)."""
    return _rows(x, lanes, True)


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
def reduce_mean(x, is_float, lanes):
    """Float: sum / n (an empty row is NaN, TF's 0/0), the sum as reduce_sum's. Integer: the sum in int64 (TF's mean of
    int32 does not wrap) divided by n, truncating toward zero as C++ does; an empty row gives 0."""
    n = x.shape[1]
    out = np.zeros(x.shape[0], x.dtype)
    if is_float:
        sums = reduce_sum(x, lanes)
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

"""Sum / Prod / Max / Min / Mean / Any / All over the last axis of a [rows, n] view, and float
Sum / Prod / Mean over any axes in TF's order (``float_*_as_tf``).

For the row reductions the lowering transposes the reduced axes to the end.
Integers wrap as TF's do (the accumulator keeps the input's dtype). Max/Min propagate NaN as TF's
CPU kernels do.

Float sums, products and means (a sum divided once) over a tensor's innermost axes go in the order of
TF's Eigen reduction (InnerMostDimReducer with the AVX packets of TF's x86-64 wheels: ``lanes``
8 float32 or 4 float64), so the bits equal TF's. Blocks of 4 packets go to 4 packet
accumulators, which are then added into the first; the remaining whole packets go to the
first; the leftover scalars are summed apart; the result is those scalars plus the first
accumulator's lanes, added halves to halves. Rows longer than ``lanes * EIGEN_LEAF`` (where
Eigen splits a row into a tree at packet-aligned points of the whole tensor) and reductions
over axes alternating with kept ones more than TF's fixed views allow add left to right, which
differs from TF's order in the last bits (a float reduction's stated tolerance).

A reduction that keeps the innermost axis (TF views it as [outer, n, inner] and reduces the
middle, or as [n, inner] and reduces the first) goes another way (Eigen's InnerMostDimPreserver):
an output in a packet that lies within one run of ``inner`` outputs adds its n terms from +0.0, in
4 packet accumulators taking every fourth term when n >= 16 (the first then adds the other three
in turn and the terms left over); any other output adds from +0.0 left to right. ``_preserving``
and pooled_gather.py's pool_rows follow it; ``float_*_as_tf`` pick the order from TF's own view
of the reduction (``tf_view``), which depends on the sizes, not only on the axes.
"""
import platform

import numpy as np
from numba import njit, types
from numba.extending import overload


EIGEN_LEAF = 1024  # Eigen's LeafSize for float and double: longer rows are split into a tree
EIGEN_UNROLL = 16  # Eigen's InnerMostDimPreserver spreads a reduced axis this long over 4 packets
# Bytes of the AVX packets TF's x86-64 wheels reduce floats with; 0 elsewhere (order unmeasured:
# left to right, within the stated tolerance).
PACKET_BYTES = 32 if platform.machine().lower() in ("x86_64", "amd64") else 0


@njit(cache=True, nogil=True, inline="always")
def add_rows(acc, table, n, a, b, c, d, start):
    """acc (``start``: +0.0, as TF's reducers start) += table rows a, b, c, d (the first ``n`` of
    them, n in 1..4), added to each element in that order, in one loop: a loop a table row took a
    pooled row of 4 ids 25 ns, one loop per four 20 ns (each loop has its set-up and alias checks)."""
    zero = acc.dtype.type(0)
    if n >= 4:
        for i in range(acc.shape[0]):
            acc[i] = ((((zero if start else acc[i]) + table[a, i]) + table[b, i]) + table[c, i]) + table[d, i]
    elif n == 3:
        for i in range(acc.shape[0]):
            acc[i] = (((zero if start else acc[i]) + table[a, i]) + table[b, i]) + table[c, i]
    elif n == 2:
        for i in range(acc.shape[0]):
            acc[i] = ((zero if start else acc[i]) + table[a, i]) + table[b, i]
    else:
        for i in range(acc.shape[0]):
            acc[i] = (zero if start else acc[i]) + table[a, i]


@njit(cache=True, nogil=True, inline="always")
def in_whole_packet(o, n_out, inner, lanes):
    """Whether TF computes output ``o`` (flat index, of ``n_out``) of a reduction that keeps its
    ``inner`` innermost outputs together as part of a packet, in the 4-accumulator order (module
    doc). Packets start at multiples of ``lanes``: TF's executor aligns its blocks to them."""
    if lanes == 0:
        return False
    p = o - o % lanes
    return p + lanes <= n_out and p % inner + lanes <= inner


@njit(cache=True, nogil=True, inline="always")
def _combine(a, b, prod):
    return a * b if prod else a + b


# _rows and _preserving compile apart, once per (type, lanes, prod): float_*_as_tf call each twice,
# and each inlined copy unrolled its literal packet loops again (float_sum_as_tf 6.3 -> 2.6 s).
@njit(cache=True, nogil=True)
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


def sum_rows_as_tf(x):
    """reduce_sum of ``x`` in TF's order for its dtype's packets: for library code, whose callers
    know the dtype but not a literal width."""


@overload(sum_rows_as_tf)
def _sum_rows_as_tf_impl(x):
    # A constant of the closure: reduce_sum compiles for that literal width, whose packet loops
    # LLVM unrolls; for a runtime width it vectorised each loop with a remainder (2.3 -> 1.3 s).
    lanes = PACKET_BYTES * 8 // x.dtype.bitwidth if isinstance(x.dtype, types.Float) else 0
    return lambda x: reduce_sum(x, lanes)


def sum_preserving_as_tf(x):
    """[outer, n, inner] ``x`` summed over its middle axis in TF's order for its dtype's packets
    (``_preserving``): for library code, as ``sum_rows_as_tf``."""


@overload(sum_preserving_as_tf)
def _sum_preserving_as_tf_impl(x):
    lanes = PACKET_BYTES * 8 // x.dtype.bitwidth if isinstance(x.dtype, types.Float) else 0
    return lambda x: _preserving(x, lanes, False)


@njit(cache=True, nogil=True)
def reduce_prod(x, lanes):
    """Row products, in the order reduce_sum adds (integers wrap: any order gives their bits)."""
    return _rows(x, lanes, True)


@njit(cache=True, nogil=True)
def _preserving(x, lanes, prod):
    """[outer, n, inner] -> [outer, inner], reduced over the middle axis in TF's order (module doc)."""
    outer, n, inner = x.shape
    identity = 1 if prod else 0
    out = np.empty((outer, inner), x.dtype)
    acc = np.empty((4, inner), x.dtype)
    start = np.full(1, identity, x.dtype)[0]
    unrolled = (n // 4) * 4 if n >= EIGEN_UNROLL and lanes > 0 else 0
    for i in range(outer):
        acc[:] = identity
        for j in range(0, unrolled, 4):
            for a in range(4):
                for c in range(inner):
                    acc[a, c] = _combine(acc[a, c], x[i, j + a, c], prod)
        for a in range(1, 4 if unrolled else 1):
            for c in range(inner):
                acc[0, c] = _combine(acc[0, c], acc[a, c], prod)
        for j in range(unrolled, n):
            for c in range(inner):
                acc[0, c] = _combine(acc[0, c], x[i, j, c], prod)
        for c in range(inner):
            out[i, c] = acc[0, c]
            # widths that fill packets have every output in one: no modulo per output
            if unrolled and inner % lanes and not in_whole_packet(i * inner + c, outer * inner, inner, lanes):
                s = start
                for j in range(n):
                    s = _combine(s, x[i, j, c], prod)
                out[i, c] = s
    return out


@njit(cache=True, nogil=True)
def tf_view(shape, mask):
    """How TF's CPU kernel views a reduction of ``shape`` over the axes in bit ``mask``
    (ReductionHelper): the sizes of its alternating runs of kept and reduced axes, and whether
    the first run is reduced. Leading size-1 axes are skipped, others join the run before them."""
    n = len(shape)
    sizes = np.ones(max(n, 1), np.int64)
    d = 0
    while d < n and shape[d] == 1:
        d += 1
    if d == n:
        return sizes[:0], True
    prev = (mask >> d) & 1 == 1
    first = prev
    count = 1
    sizes[0] = shape[d]
    for e in range(d + 1, n):
        flag = prev if shape[e] == 1 else (mask >> e) & 1 == 1
        if flag == prev:
            sizes[count - 1] *= shape[e]
        else:
            sizes[count] = shape[e]
            count += 1
        prev = flag
    return sizes[:count], first


@njit(cache=True, nogil=True, inline="always")
def _as_tf(flat, shape, mask, lanes, prod):
    """Float sums (``prod``: products) of a C-contiguous tensor, given as ``flat`` and its
    ``shape`` (int64: one compiled kernel for every rank), over the axes in bit ``mask``, flat in
    the output's order, reduced as TF's CPU kernel views it (tf_view): a copy, rows, the whole
    tensor as one row, a middle / first axis in the preserving order (module doc), or the first
    and last runs one coefficient at a time. The lowering sends nothing with more runs."""
    identity = 1 if prod else 0
    start = np.full(1, identity, flat.dtype)[0]
    kept = 1
    for d in range(shape.shape[0]):
        if not (mask >> d) & 1:
            kept *= shape[d]
    if flat.size == 0:
        return np.full(kept, start, flat.dtype)
    runs, first = tf_view(shape, mask)
    if runs.shape[0] == 0 or (runs.shape[0] == 1 and not first):  # only size-1 axes reduced
        return flat.copy()
    if runs.shape[0] == 1:
        return _rows(flat.reshape((1, flat.size)), lanes, prod)
    if runs.shape[0] == 2 and first:
        return _preserving(flat.reshape((1, runs[0], runs[1])), lanes, prod).reshape(runs[1])
    if runs.shape[0] == 2:
        return _rows(flat.reshape((runs[0], runs[1])), lanes, prod)
    if not first:
        return _preserving(flat.reshape((runs[0], runs[1], runs[2])), lanes, prod).reshape(runs[0] * runs[2])
    # Eigen's generic reducer: the last reduced axis outermost, one coefficient at a time
    x3 = flat.reshape((runs[0], runs[1], runs[2]))
    out = np.empty(runs[1], flat.dtype)
    for j in range(runs[1]):
        s = start
        for c in range(runs[2]):
            for i in range(runs[0]):
                s = _combine(s, x3[i, j, c], prod)
        out[j] = s
    return out


@njit(cache=True, nogil=True)
def float_sum_as_tf(flat, shape, mask, lanes):
    """Sums of a float tensor (``flat``, ``shape``) over the axes in bit ``mask``, flat, in TF's
    order (_as_tf)."""
    return _as_tf(flat, shape, mask, lanes, False)


@njit(cache=True, nogil=True)
def float_prod_as_tf(flat, shape, mask, lanes):
    return _as_tf(flat, shape, mask, lanes, True)


@njit(cache=True, nogil=True)
def float_mean_as_tf(flat, shape, mask, lanes):
    """float_sum_as_tf divided once by the terms each output has (NaN where none: TF's 0/0)."""
    sums = float_sum_as_tf(flat, shape, mask, lanes)
    n = flat.size // sums.size if sums.size > 0 else 0
    out = np.empty_like(sums)
    for i in range(sums.shape[0]):
        out[i] = sums[i] / n if n > 0 else np.nan
    return out


@njit(cache=True, nogil=True, inline="always")
def _takes(v, acc, is_max):
    """Whether TF's max (min) reducer replaces ``acc`` by the next term ``v``: a NaN sticks, and
    on a tie the later term wins (std::max(t, accum) returns t unless t < accum), so of +0.0
    and -0.0 the later one's sign is kept."""
    if acc != acc:
        return False
    if v != v:
        return True
    return not (v < acc) if is_max else not (acc < v)


@njit(cache=True, nogil=True)
def _extreme(x, start, is_max):
    out = np.full(x.shape[0], start, x.dtype)
    for i in range(x.shape[0]):
        acc = out[i]
        for j in range(x.shape[1]):
            v = x[i, j]
            if _takes(v, acc, is_max):
                acc = v
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
def _extreme_middle(x, start, is_max):
    """[outer, n, inner] -> [outer, inner] over the middle axis, terms in the same order as
    _extreme's rows (no transposed copy: the reduce lowering's one_hot + max at 4,096 rows spent
    most of its time copying)."""
    outer, n, inner = x.shape
    out = np.full((outer, inner), start, x.dtype)
    for i in range(outer):
        for j in range(n):
            for c in range(inner):
                if _takes(x[i, j, c], out[i, c], is_max):
                    out[i, c] = x[i, j, c]
    return out


@njit(cache=True, nogil=True)
def reduce_max_middle(x, lowest):
    return _extreme_middle(x, lowest, True)


@njit(cache=True, nogil=True)
def reduce_min_middle(x, highest):
    return _extreme_middle(x, highest, False)


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

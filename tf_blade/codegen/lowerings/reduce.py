"""Sum / Prod / Max / Min / Mean / Any / All over constant axes (keep_dims or not).

Float Sum / Prod / Mean go to kernels/reduce.py's ``float_*_as_tf``, which reduce in TF's order
for the view TF's kernel takes at run time. Otherwise (integers, booleans, extremes, and axes
alternating with kept ones more than twice) the reduced axes move to the end (a transpose,
skipped when they already are), the input is viewed as [kept, reduced] and each row is reduced.
Axes out of range or repeated leave the node to TF, which raises its own error at run time."""
import numpy as np

from ..dtypes import MAIN_NUMERIC
from ..registry import Lowering, lowering
from ._common import const_input, const_value, numeric_only, transposed_copy
from ...kernels.reduce import PACKET_BYTES

_KERNEL = {"Sum": "reduce_sum", "Prod": "reduce_prod", "Max": "reduce_max", "Min": "reduce_min",
           "Mean": "reduce_mean", "Any": "reduce_any", "All": "reduce_all"}


def _axes(node, graph):
    """The normalized reduced axes, or None when TF would reject them."""
    rank = graph.rank_of(node.inputs[0])
    values = const_value(graph, node.inputs[1]).ravel().tolist()
    axes = [a + rank if a < 0 else a for a in values]
    if any(not 0 <= a < max(rank, 1) for a in axes) or len(set(axes)) != len(axes):
        return None
    return sorted(a for a in axes if a < rank)


# Lanes of the AVX packets TF's x86-64 wheels sum and multiply with (kernels/reduce.py), by dtype.
# Elsewhere (another packet width, unmeasured) rows reduce left to right, within the stated tolerance.
EIGEN_LANES = {"float32": PACKET_BYTES // 4, "float64": PACKET_BYTES // 8} if PACKET_BYTES else {}


def _runs(reduced, rank) -> int:
    """Alternating runs of reduced and kept axes (TF's view has at most this many)."""
    flags = [d in reduced for d in range(rank)]
    return sum(1 for d in range(rank) if d == 0 or flags[d] != flags[d - 1])


def _extra(op, dtype, lanes):
    """The arguments some reductions take beyond the data."""
    if op in ("Sum", "Prod"):
        return f", {lanes}"
    if op == "Mean":
        return f", {dtype.startswith('float')}, {lanes}"
    if op in ("Max", "Min"):
        sign = "-" if op == "Max" else ""
        if dtype.startswith("float"):
            return f", np.{dtype}({sign}np.inf)"
        info = np.iinfo(dtype)
        return f", np.{dtype}({info.min if op == 'Max' else info.max})"
    return ""


@lowering(*_KERNEL)
class ReduceLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        reason = const_input(graph, node, 1) or numeric_only(node, graph)
        if reason:
            return reason
        if _axes(node, graph) is None:
            return "invalid reduction axes (TF raises)"
        if node.op == "Mean" and node.out_dtypes[0] not in MAIN_NUMERIC:
            return "Mean of small integers (TF divides by a wrapped count)"
        return None

    def emit(self, node, ins, em):
        x, axes_in = ins
        rank = x.rank
        values = axes_in.const.ravel().tolist()
        reduced = sorted({a + rank if a < 0 else a for a in values} & set(range(rank)))
        kept = [d for d in range(rank) if d not in reduced]
        keep_dims = node.attrs.get("keep_dims", False)
        dims = [("1" if d in reduced else f"{x.var}.shape[{d}]") for d in range(rank)
                if keep_dims or d not in reduced]
        out, out_shape = em.tmp(), ", ".join(dims) or "1"
        size = lambda dims: " * ".join(f"{x.var}.shape[{d}]" for d in dims) or "1"
        lanes = EIGEN_LANES.get(x.dtype, 0)
        if node.op in ("Sum", "Prod", "Mean") and lanes and _runs(reduced, rank) <= 3:
            mask = sum(1 << d for d in reduced)
            kernel = em.kernel("reduce", f"float_{node.op.lower()}_as_tf")
            # lanes a literal, on purpose: Numba then compiles the kernel for that packet width
            # (2.6 s, once per machine), which runs twice as fast as one for any width
            em.line(f"{out} = {kernel}(np.ascontiguousarray({x.var}).reshape({x.var}.size), "
                    f"np.array({x.var}.shape, np.int64), np.int64({mask}), {lanes})"
                    f".reshape(({out_shape},))")
            return [out]
        if node.op in ("Max", "Min") and 0 < len(reduced) and reduced == list(range(reduced[0], reduced[-1] + 1)) \
                and reduced[-1] < rank - 1:  # one block of axes before kept ones: no transposed copy
            before, after = range(reduced[0]), range(reduced[-1] + 1, rank)
            kernel = em.kernel("reduce", f"reduce_{node.op.lower()}_middle")
            em.line(f"{out} = {kernel}(np.ascontiguousarray({x.var}).reshape(({size(before)}, {size(reduced)}, "
                    f"{size(after)})){_extra(node.op, x.dtype, 0)}).reshape(({out_shape},))")
            return [out]
        perm = kept + reduced
        view = em.tmp()
        if perm != list(range(rank)):
            em.line(f"{view} = {transposed_copy(em, x.var, perm)}")
        else:
            em.line(f"{view} = np.ascontiguousarray({x.var})")
        # Integers: any order gives TF's bits. Float sums here alternate axes more than TF's
        # fixed views do (TF transposes them too): left to right, within the stated tolerance.
        rows = em.tmp()
        em.line(f"{rows} = {em.kernel('reduce', _KERNEL[node.op])}({view}.reshape(({size(kept)}, {size(reduced)})){_extra(node.op, x.dtype, 0)})")
        em.line(f"{out} = {rows}.reshape(({out_shape},))")
        return [out]

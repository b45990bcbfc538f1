"""Squeeze of explicitly listed axes, Size (the element count as out_type) and Rank."""
import numpy as np

from ..registry import Lowering, lowering
from ._common import unsupported_dtype


@lowering("Squeeze")
class SqueezeLowering(Lowering):
    view_only = True

    def check(self, node, graph):
        rank = graph.rank_of(node.inputs[0])
        axes = node.attrs.get("squeeze_dims", [])
        if rank is None or not axes:
            return "squeezing every size-1 dim needs static shapes"
        normalized = [a + rank if a < 0 else a for a in axes]
        if any(not 0 <= a < rank for a in normalized) or len(set(normalized)) != len(normalized):
            return "squeeze_dims out of range (TF raises)"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        axes = sorted(a + x.rank if a < 0 else a for a in node.attrs["squeeze_dims"])
        axes_const = em.const(np.array(axes, np.int64), "A")
        (shape,) = em.call(1, f"{em.kernel('shape_ops', 'squeezed_shape')}({x.var}, {axes_const}, err)", True)
        return [em.reshaped(x, x.var, shape, x.rank - len(axes))]


@lowering("Size")
class SizeLowering(Lowering):
    reads_shapes_only = True

    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        return unsupported_dtype(node)

    def emit(self, node, ins, em):  # a scalar travels as (1,): its size is 1 either way
        example = f"np.empty(0, np.{node.out_dtypes[0]})"
        return em.call(1, f"{em.kernel('shape_ops', 'size_of')}({ins[0].var}, {example}, err)", True)


@lowering("Rank")
class RankLowering(Lowering):
    reads_shapes_only = True

    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        return None

    def emit(self, node, ins, em):
        out = em.tmp()
        em.line(f"{out} = np.full(1, {ins[0].rank}, np.int32)")
        return [out]

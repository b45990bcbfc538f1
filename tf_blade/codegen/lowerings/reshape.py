"""Reshape: -1 resolved and the element count checked by the kernel, then a static-rank view."""
from ..registry import Lowering, lowering


@lowering("Reshape")
class ReshapeLowering(Lowering):
    view_only = True

    def check(self, node, graph):
        if graph.rank_of(node.inputs[1]) != 1 or node.out_ranks[0] is None:
            return "target shape length unknown"
        return None

    def emit(self, node, ins, em):
        x, shape = ins
        (dims,) = em.call(1, f"{em.kernel('shape_ops', 'resolve_reshape')}({_dims(x)}, {shape.var}, err)", True)
        return [em.reshaped(x, x.var, dims, node.out_ranks[0])]


def _dims(x):
    """The input's true dims as a tuple expression (a scalar is one value of size 1)."""
    return f"{x.var}.shape" if x.rank > 0 else "(1,)"


@lowering("ExpandDims")
class ExpandDimsLowering(Lowering):
    view_only = True

    def check(self, node, graph):
        return None if node.out_ranks[0] is not None else "rank unknown"

    def emit(self, node, ins, em):
        x, axis = ins
        (shape,) = em.call(1, f"{em.kernel('shape_ops', 'expanded_shape')}({x.var}, {em.int64(x.rank)}, {axis.var}[0], err)", True)
        return [em.reshaped(x, x.var, shape, x.rank + 1)]

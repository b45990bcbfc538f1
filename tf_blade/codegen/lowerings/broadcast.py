"""BroadcastArgs(s0, s1) and BroadcastTo(input, shape) (ragged tf.where broadcasts with them)."""
from ..registry import Lowering, lowering
from ..emitter import empty_expr
from ._common import numeric_only


@lowering("BroadcastArgs")
class BroadcastArgsLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) != 1 for r in node.inputs):
            return "shapes must be vectors"
        return None

    def emit(self, node, ins, em):
        s0, s1 = ins
        return em.call(1, f"{em.kernel('broadcast', 'broadcast_args')}({s0.var}, {s1.var}, err)", True)


@lowering("BroadcastTo")
class BroadcastToLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[1]) != 1:
            return "shape must be a vector"
        if node.out_ranks[0] == 0:
            return "scalar output"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        x, shape = ins
        like = empty_expr(x.dtype, node.out_ranks[0])
        return em.call(1, f"{em.kernel('broadcast', 'broadcast_to')}({x.var}, {shape.var}, {like}, err)", True)

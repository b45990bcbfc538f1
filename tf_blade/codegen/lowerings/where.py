"""Where with one input: coordinates of true / non-zero elements."""
from ..registry import Lowering, lowering


@lowering("Where")
class WhereLowering(Lowering):
    def check(self, node, graph):
        rank = graph.rank_of(node.inputs[0])
        if len(node.inputs) != 1 or not rank:
            return "needs one input of known rank >= 1"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        return em.call(1, f"{em.kernel('where', 'where')}({x.var}, {em.int64(x.rank)})", False)

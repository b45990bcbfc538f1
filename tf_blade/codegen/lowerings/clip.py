"""ClipByValue with scalar or same-shaped bounds (checked at run time, as TF does)."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("ClipByValue")
class ClipByValueLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        if any(graph.rank_of(r) not in (0, graph.rank_of(node.inputs[0])) for r in node.inputs[1:]):
            return "bounds of another rank (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        t, lo, hi = ins
        return em.call(1, f"{em.kernel('clip', 'clip_by_value')}({t.var}, {lo.var}, {hi.var}, "
                          f"{lo.rank == 0}, {hi.rank == 0}, err)", True)

"""Cumsum over a scalar axis known only at run time (exclusive and reverse as attributes)."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Cumsum")
class CumsumLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[1]) != 0:
            return "axis must be a scalar"
        if graph.rank_of(node.inputs[0]) == 0:
            return "scalar input (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        x, axis = ins
        exclusive, reverse = bool(node.attrs.get("exclusive", False)), bool(node.attrs.get("reverse", False))
        return em.call(1, f"{em.kernel('cumsum', 'cumsum')}({x.var}, {axis.var}, {exclusive}, {reverse}, err)", True)

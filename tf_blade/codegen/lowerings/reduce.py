"""Prod / Sum over the only axis of a shape vector (how feature columns size their batches)."""
from ..registry import Lowering, lowering
from ._common import const_input, numeric_only


@lowering("Prod", "Sum")
class ReduceVectorLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) != 1 or node.attrs.get("keep_dims"):
            return "only full reductions of vectors"
        return const_input(graph, node, 1) or numeric_only(node, graph)

    def emit(self, node, ins, em):
        func = "prod_all" if node.op == "Prod" else "sum_all"
        return em.call(1, f"{em.kernel('shape_ops', func)}({ins[0].var})", False)

"""Transpose by a constant permutation (an invalid one is left to TF, which raises)."""
from ..registry import Lowering, lowering
from ._common import const_input, const_value, numeric_only, transposed_copy


@lowering("Transpose")
class TransposeLowering(Lowering):
    def check(self, node, graph):
        rank = graph.rank_of(node.inputs[0])
        if rank is None:
            return "input rank unknown"
        reason = const_input(graph, node, 1)
        if reason:
            return reason
        if sorted(const_value(graph, node.inputs[1]).ravel().tolist()) != list(range(rank)):
            return "perm is not a permutation of the input's axes (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        x, perm = ins
        out = em.tmp()
        if x.rank < 2:
            em.line(f"{out} = {x.var}")
        else:
            em.line(f"{out} = {transposed_copy(em, x.var, perm.const.ravel())}")
        return [out]

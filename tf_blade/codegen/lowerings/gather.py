"""GatherV2 (constant axis, batch_dims 0) and ResourceGather (the variable arrives already read)."""
from ..registry import Lowering, lowering
from ._common import const_input


@lowering("GatherV2", "ResourceGather")
class GatherLowering(Lowering):
    def check(self, node, graph):
        if node.attrs.get("batch_dims", 0) != 0:
            return "batch_dims != 0"
        if any(graph.rank_of(r) is None for r in node.inputs[:2]) and node.op == "GatherV2":
            return "input rank unknown"
        if node.op == "GatherV2":
            return const_input(graph, node, 2)
        return None

    def emit(self, node, ins, em):
        params, ids = ins[0], ins[1]
        axis = int(ins[2].const.ravel()[0]) if node.op == "GatherV2" else 0
        if axis < 0:
            axis += params.rank
        flat, shape = em.call(2, f"{em.kernel('gather', 'gather')}({params.var}, {ids.var}, {axis}, {int(node.op == 'ResourceGather')}, err)", True)
        if ids.rank == 0:  # scalar ids travel as shape (1,): drop the dim the kernel gave them
            em.line(f"{shape} = np.concatenate(({shape}[:{axis}], {shape}[{axis} + 1:]))")
        return [em.reshaped(params, flat, shape, node.out_ranks[0])]

"""GatherV2 (constant axis, any batch_dims) and ResourceGather (the variable arrives already read)."""
from ..registry import Lowering, lowering
from ._common import const_input, const_value


@lowering("GatherV2", "ResourceGather")
class GatherLowering(Lowering):
    def check(self, node, graph):
        if node.op == "ResourceGather":
            return "batch_dims != 0" if node.attrs.get("batch_dims", 0) != 0 else None
        if any(graph.rank_of(r) is None for r in node.inputs[:2]):
            return "input rank unknown"
        reason = const_input(graph, node, 2)
        if reason:
            return reason
        axis = int(const_value(graph, node.inputs[2]).ravel()[0])
        if _axes(axis, node.attrs.get("batch_dims", 0), graph.rank_of(node.inputs[0]), graph.rank_of(node.inputs[1])) is None:
            return "axis or batch_dims out of range, or batch_dims > axis (TF raises)"
        return None

    def emit(self, node, ins, em):
        params, ids = ins[0], ins[1]
        axis, batch_dims = (0, 0) if node.op == "ResourceGather" else _axes(
            int(ins[2].const.ravel()[0]), node.attrs.get("batch_dims", 0), params.rank, ids.rank)
        flat, shape = em.call(2, f"{em.kernel('gather', 'gather')}({params.var}, {ids.var}, {em.int64(axis)}, {em.int64(batch_dims)}, {em.int64(node.op == 'ResourceGather')}, err)", True)
        if ids.rank == 0:  # scalar ids travel as shape (1,): drop the dim the kernel gave them
            em.line(f"{shape} = np.concatenate(({shape}[:{axis}], {shape}[{axis} + 1:]))")
        return [em.reshaped(params, flat, shape, node.out_ranks[0])]


def _axes(axis, batch_dims, params_rank, ids_rank):
    """GatherV2's (axis, batch_dims), both made non-negative, or None where TF raises."""
    if not -params_rank <= axis < params_rank or not -ids_rank <= batch_dims <= ids_rank:
        return None
    axis = axis + params_rank if axis < 0 else axis
    batch_dims = batch_dims + ids_rank if batch_dims < 0 else batch_dims
    if batch_dims > axis or batch_dims >= params_rank:
        return None
    return axis, batch_dims

"""SparseToDense: scalar/vector/matrix indices, scalar or per-index values, scalar default."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("SparseToDense")
class SparseToDenseLowering(Lowering):
    def check(self, node, graph):
        ranks = [graph.rank_of(r) for r in node.inputs]
        if ranks[0] not in (0, 1, 2) or ranks[1] not in (0, 1) or ranks[2] not in (0, 1) or ranks[3] != 0:
            return "indices, output_shape, values or default of a rank TF rejects (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        indices, shape, values, default = ins
        view = {0: "(1, 1)", 1: f"({indices.var}.shape[0], 1)", 2: f"{indices.var}.shape"}[indices.rank]
        flat, dims = em.call(2, f"{em.kernel('sparse_to_dense', 'sparse_to_dense')}("
                                f"np.ascontiguousarray({indices.var}).reshape({view}), {shape.var}.ravel(), "
                                f"{values.var}, {values.rank == 0}, {default.var}, "
                                f"{bool(node.attrs.get('validate_indices', True))}, err)", True)
        return [em.reshaped(values, flat, dims, node.out_ranks[0])]

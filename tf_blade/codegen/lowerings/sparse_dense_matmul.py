"""SparseTensorDenseMatMul (float32/float64/int32 values, int32/int64 indices, both adjoints)."""
from ..registry import Lowering, lowering
from ._common import numeric_only

_TYPES = (1, 2, 3)  # float32, float64, int32: TF's CPU kernels beside the complex ones


@lowering("SparseTensorDenseMatMul")
class SparseTensorDenseMatMulLowering(Lowering):
    def check(self, node, graph):
        ranks = [graph.rank_of(r) for r in node.inputs]
        if ranks != [2, 1, 1, 2]:
            return "a_indices, a_values, a_shape or b of a rank TF rejects (TF raises)"
        if graph.dtype_of(node.inputs[1]) not in _TYPES:
            return "complex values"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        indices, values, shape, b = ins
        (out,) = em.call(1, f"{em.kernel('sparse_dense_matmul', 'sparse_dense_matmul')}("
                            f"{indices.var}, {values.var}, {shape.var}, np.ascontiguousarray({b.var}), "
                            f"{bool(node.attrs.get('adjoint_a', False))}, {bool(node.attrs.get('adjoint_b', False))}, err)",
                         True)
        return [out]

"""SparseReshape."""
from ..registry import Lowering, lowering


@lowering("SparseReshape")
class SparseReshapeLowering(Lowering):
    def emit(self, node, ins, em):
        indices, shape, new_shape = ins
        return em.call(2, f"{em.kernel('sparse_reshape', 'sparse_reshape')}({indices.var}, {shape.var}, {new_shape.var}, err)", True)

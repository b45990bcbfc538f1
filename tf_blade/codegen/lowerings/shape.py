"""Shape: the runtime dims of its input as int32/int64."""
from ..registry import Lowering, lowering
from ._common import unsupported_dtype


@lowering("Shape")
class ShapeLowering(Lowering):
    reads_shapes_only = True

    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        return unsupported_dtype(node)

    def emit(self, node, ins, em):
        x = ins[0]
        example = f"np.empty(0, np.{node.out_dtypes[0]})"
        return em.call(1, f"{em.kernel('shape_ops', 'shape_of')}({x.var}, {em.int64(x.rank)}, {example}, err)", True)

"""Unique over an integer vector."""
from ..dtypes import INTEGER
from ..registry import Lowering, lowering


@lowering("Unique")
class UniqueLowering(Lowering):
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) not in INTEGER:
            return "only integer keys"
        return None

    def emit(self, node, ins, em):
        idx_example = f"np.empty(0, np.{node.out_dtypes[1]})"
        return em.call(2, f"{em.kernel('unique', 'unique')}({ins[0].var}, {idx_example})", False)

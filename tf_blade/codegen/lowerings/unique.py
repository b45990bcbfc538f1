"""Unique and UniqueWithCounts over an integer vector."""
from ..dtypes import INTEGER
from ..registry import Lowering, lowering


@lowering("Unique", "UniqueWithCounts")
class UniqueLowering(Lowering):
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) not in INTEGER:
            return "only integer keys"
        return None

    def emit(self, node, ins, em):
        idx_example = f"np.empty(0, np.{node.out_dtypes[1]})"
        y, idx = em.call(2, f"{em.kernel('unique', 'unique')}({ins[0].var}, {idx_example})", False)
        if node.op == "Unique":
            return [y, idx]
        count_example = f"np.empty(0, np.{node.out_dtypes[2]})"
        (counts,) = em.call(1, f"{em.kernel('unique', 'counts_of')}({idx}, {y}.shape[0], {count_example})", False)
        return [y, idx, counts]

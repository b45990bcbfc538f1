"""RaggedTensorToSparse of one ragged dimension over a vector of values (``RaggedTensor.to_sparse()``
of a split string field, a ragged id list): kernels/ragged_to_sparse.py."""
from ..registry import Lowering, lowering


@lowering("RaggedTensorToSparse")
class RaggedTensorToSparseLowering(Lowering):
    def check(self, node, graph):
        if node.attrs.get("RAGGED_RANK") != 1:
            return "more than one ragged dimension"
        if graph.rank_of(node.inputs[0]) != 1 or graph.rank_of(node.inputs[1]) != 1:
            return "row splits and values must be vectors (values of higher rank are not lowered)"
        return None

    def emit(self, node, ins, em):
        splits, values = ins
        k = em.kernel("ragged_to_sparse", "ragged_to_sparse")
        indices, shape = em.call(2, f"{k}({splits.var}, {values.var}.shape[0], err)", True)
        return [indices, values, shape]

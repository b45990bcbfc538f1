"""DenseBincount of a vector or matrix input, and RaggedBincount (kernels/bincount.py)."""
from ..dtypes import MAIN_NUMERIC
from ..registry import Lowering, lowering


def _size_and_weights_reason(node, graph, size):
    if graph.rank_of(size) != 0:
        return "size must be a scalar (TF raises)"
    if node.out_dtypes[0] not in MAIN_NUMERIC:
        return "only int32/int64/float32/float64 weights"
    return None


@lowering("DenseBincount")
class DenseBincountLowering(Lowering):
    def check(self, node, graph):
        data, size, weights = node.inputs
        if graph.rank_of(data) is None or graph.rank_of(data) > 2 or graph.rank_of(weights) is None:
            return "input rank unknown or above 2 (TF raises)"
        if graph.rank_of(data) == 0:  # TF's shape function says rank 0, its kernel returns [size]
            return "scalar input (TF's static rank disagrees with its result)"
        return _size_and_weights_reason(node, graph, size)

    def emit(self, node, ins, em):
        data, size, weights = ins
        same = " and ".join(f"{weights.var}.shape[{d}] == {data.var}.shape[{d}]" for d in range(data.rank))
        same = (same or "True") if weights.rank == data.rank else "False"
        dims = ", ".join(f"{weights.var}.shape[{d}]" for d in range(weights.rank))
        shape = f"np.array(({dims},), np.int64)" if weights.rank else "np.zeros(0, np.int64)"
        example = f"np.zeros(0, np.{node.out_dtypes[0]})"
        binary = bool(node.attrs.get("binary_output", False))
        kernel = "bincount_rows" if data.rank == 2 else "bincount_vector"
        return em.call(1, f"{em.kernel('bincount', kernel)}({data.var}, {size.var}[0], {weights.var}, {same}, "
                          f"{shape}, {binary}, {example}, err)", True)


@lowering("RaggedBincount")
class RaggedBincountLowering(Lowering):
    def check(self, node, graph):
        splits, values, size, weights = node.inputs
        if graph.rank_of(splits) != 1 or graph.rank_of(values) != 1 or graph.rank_of(weights) is None:
            return "splits and values must be vectors"
        return _size_and_weights_reason(node, graph, size)

    def emit(self, node, ins, em):
        splits, values, size, weights = ins
        example = f"np.zeros(0, np.{node.out_dtypes[0]})"
        binary = bool(node.attrs.get("binary_output", False))
        return em.call(1, f"{em.kernel('bincount', 'bincount_ragged')}({splits.var}, {values.var}, {size.var}[0], "
                          f"np.ascontiguousarray({weights.var}), {binary}, {example}, err)", True)

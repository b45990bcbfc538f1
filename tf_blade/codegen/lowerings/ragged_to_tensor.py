"""RaggedTensorToTensor of one ragged dimension (``rt.to_tensor(default, shape=[None, k])``: a
split tags field padded to k columns, a history's embeddings to [rows, k, dim]):
kernels/ragged_to_tensor.py.

Lowered where the requested shape and the default are what TF accepts, known when the graph is
built (a constant shape, a scalar default, a constant one for strings); anything else stays in TF
and gets TF's error. String results are VIEWs of the values and the default, held by their owner."""
import numpy as np

from ..dtypes import STRING, numpy_name
from ..registry import Lowering, lowering
from ._common import const_input, const_value

_PARTITIONS = (["ROW_SPLITS"], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"])


def _requested(shape, rank):
    """The shape asked for (int64, -1 where TF finds the dim) of a rank-``rank`` result, from a
    constant shape input, or None where TF raises."""
    shape = np.asarray(shape, np.int64)
    if shape.ndim == 0:
        return np.full(rank, -1, np.int64) if shape == -1 else None  # -1: unknown rank
    if shape.shape != (rank,) or (shape < -1).any():
        return None
    return shape


@lowering("RaggedTensorToTensor")
class RaggedTensorToTensorLowering(Lowering):
    def check(self, node, graph):
        types = node.attrs.get("row_partition_types")
        if types not in _PARTITIONS:
            return "more than one ragged dimension, or rows given otherwise than as splits or row ids"
        partition_ranks = [0, 1] if types[0] == "FIRST_DIM_SIZE" else [1]
        if [graph.rank_of(ref) for ref in node.inputs[3:]] != partition_ranks:
            return "row partitions of unexpected ranks (TF raises)"
        values_rank = graph.rank_of(node.inputs[1])
        if not values_rank or graph.rank_of(node.inputs[2]) != 0:
            return "values of unknown rank or a default that is not a scalar (others are not lowered)"
        if const_input(graph, node, 0):
            return "the shape is not a constant"
        requested = _requested(const_value(graph, node.inputs[0]), values_rank + 1)
        if requested is None:
            return "a shape TF rejects (TF raises)"
        if numpy_name(graph.dtype_of(node.inputs[3])) == "int32" and (requested > np.iinfo(np.int32).max).any():
            return "a dim past int32 with int32 row partitions (TF truncates it)"
        if graph.dtype_of(node.inputs[1]) == STRING:
            if values_rank != 1:
                return "string values of rank 2 or more"
            if const_input(graph, node, 2):
                return "a string default that is not a constant (its bytes would need an owner too)"
        return None

    def emit(self, node, ins, em):
        shape, values, default, *partitions = ins
        requested = em.const(_requested(shape.const, values.rank + 1), "R")
        if len(partitions) == 2:
            first_dim_size, partition = partitions[0].var, partitions[1].var
        else:
            partition = partitions[0].var
            first_dim_size = f"np.zeros(0, {partition}.dtype)"  # rows from the splits
        head = f"{partition}, {first_dim_size}, {requested}"
        if not values.is_string:
            k = em.kernel("ragged_to_tensor", "ragged_to_tensor")
            return em.call(1, f"{k}({head}, {values.var}, {default.var}, err)", True)
        k = em.kernel("ragged_to_tensor", "ragged_to_tensor_strings")
        ids, tstrings = em.call(2, f"{k}({head}, {values.var}, {values.off}, {values.dat}, {default.var}, "
                                   f"{default.off}, {default.dat}, err)", True)
        return [em.made_strings(tstrings, ids, em.bytes_owner(values))]

"""RaggedRange over scalar or vector starts, limits and deltas (ragged row ids, tf.ragged.range)."""
from ..dtypes import MAIN_NUMERIC
from ..registry import Lowering, lowering


@lowering("RaggedRange")
class RaggedRangeLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) not in (0, 1) for r in node.inputs):
            return "starts, limits and deltas must be scalars or vectors"
        if node.out_dtypes[1] not in MAIN_NUMERIC:
            return "only float32/float64/int32/int64"
        return None

    def emit(self, node, ins, em):
        splits = f"np.empty(0, np.{node.out_dtypes[0]})"
        is_float = node.out_dtypes[1].startswith("float")
        return em.call(2, f"{em.kernel('ragged_range', 'ragged_range')}({', '.join(v.var for v in ins)}, "
                          f"{', '.join(str(v.rank == 0) for v in ins)}, {splits}, "
                          f"{is_float}, err)", True)

"""Range over scalar start/limit/delta of one numeric dtype."""
from ..dtypes import MAIN_NUMERIC
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Range")
class RangeLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) != 0 for r in node.inputs):
            return "start, limit and delta must be scalars"
        if node.out_dtypes[0] not in MAIN_NUMERIC:
            return "only float32/float64/int32/int64"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        start, limit, delta = ins
        return em.call(1, f"{em.kernel('range_op', 'range_values')}({start.var}, {limit.var}, {delta.var}, {start.dtype.startswith('float')}, err)", True)

"""SparseSegmentSum / Mean / SqrtN and their WithNumSegments forms."""
from ..dtypes import FLOAT
from ..registry import Lowering, lowering

_MODE = {"Sum": 0, "Mean": 1, "SqrtN": 2}
_OPS = [f"SparseSegment{m}{s}" for m in _MODE for s in ("", "WithNumSegments")]


@lowering(*_OPS)
class SparseSegmentReductionLowering(Lowering):
    def check(self, node, graph):
        if node.out_dtypes[0] not in FLOAT:
            return "only float32/float64 data"
        if graph.rank_of(node.inputs[0]) is None:
            return "data rank unknown"
        return None

    def emit(self, node, ins, em):
        data, indices, segment_ids = ins[:3]
        num = (f"np.int64({ins[3].var}[0])" if len(ins) == 4
               else em.kernel("sparse_segment_reduction", "NO_NUM_SEGMENTS"))
        mode = _MODE[node.op[len("SparseSegment"):].replace("WithNumSegments", "")]
        (flat,) = em.call(1, f"{em.kernel('sparse_segment_reduction', 'sparse_segment_reduce')}("
                             f"{data.var}, {indices.var}, {segment_ids.var}, {num}, {mode}, err)", True)
        shape = em.tmp("shape")
        em.line(f"{shape} = np.array({data.var}.shape, np.int64)")
        em.line(f"{shape}[0] = {flat}.shape[0]")
        return [em.reshaped(data, flat, shape, data.rank)]

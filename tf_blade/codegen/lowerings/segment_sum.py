"""SegmentSum, SegmentMax (integers: Eigen's float max orders NaNs by vector position) and
UnsortedSegmentSum: data viewed as [segment-id positions, inner]."""
from ..dtypes import FLOAT
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("SegmentSum", "SegmentMax", "UnsortedSegmentSum")
class SegmentSumLowering(Lowering):
    def check(self, node, graph):
        data_rank, ids_rank = graph.rank_of(node.inputs[0]), graph.rank_of(node.inputs[1])
        if data_rank is None or ids_rank is None:
            return "input rank unknown"
        if node.op == "SegmentMax" and graph.dtype_of(node.inputs[0]) in FLOAT:
            return "float SegmentMax (Eigen's NaN order)"
        if node.op != "UnsortedSegmentSum" and (ids_rank != 1 or data_rank < 1):
            return "segment_ids must be a vector (TF raises)"
        if node.op == "UnsortedSegmentSum" and (ids_rank > data_rank or graph.rank_of(node.inputs[2]) != 0):
            return "segment_ids longer than data's shape, or num_segments not a scalar (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        data, ids = ins[:2]
        lead = ids.rank if node.op == "UnsortedSegmentSum" else 1
        size = lambda dims: " * ".join(f"{data.var}.shape[{d}]" for d in dims) or "1"
        ids_shape = f"np.array({ids.var}.shape, np.int64)" if ids.rank else "np.zeros(0, np.int64)"
        if node.op == "UnsortedSegmentSum":
            em.call(0, f"{em.kernel('segment_sum', 'check_prefix')}(np.array({data.var}.shape, np.int64), {ids_shape}, err)", True)
        view = f"np.ascontiguousarray({data.var}).reshape(({size(range(lead))}, {size(range(lead, data.rank))}))"
        ids_flat = f"np.ascontiguousarray({ids.var}).ravel()"
        if node.op != "UnsortedSegmentSum":
            take_max = node.op == "SegmentMax"
            call = f"{em.kernel('segment_sum', 'segment_sum')}({view}, {ids_flat}, err, {take_max})"
        else:
            call = f"{em.kernel('segment_sum', 'unsorted_segment_sum')}({view}, {ids_flat}, {ids_shape}, {ins[2].var}, err)"
        (flat,) = em.call(1, call, True)
        dims = [f"{flat}.shape[0]"] + [f"{data.var}.shape[{d}]" for d in range(lead, data.rank)]
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape(({', '.join(dims)},))")
        return [out]

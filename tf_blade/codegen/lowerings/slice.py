"""Slice on rank-1 and rank-2 tensors."""
from ..registry import Lowering, lowering


@lowering("Slice")
class SliceLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) not in (1, 2):
            return "only ranks 1 and 2"
        return None

    def emit(self, node, ins, em):
        x, begin, size = ins
        (bounds,) = em.call(1, f"{em.kernel('slicing', 'slice_bounds')}(np.array({x.var}.shape, np.int64), {begin.var}, {size.var}, err)", True)
        (out,) = em.call(1, f"{em.kernel('slicing', f'take_{x.rank}d')}({x.var}, {bounds})", False)
        if x.is_string:
            em.share_pool(out, x)
        return [out]

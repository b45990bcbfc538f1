"""Slice on tensors of any rank >= 1."""
from ..registry import Lowering, lowering


@lowering("Slice")
class SliceLowering(Lowering):
    def check(self, node, graph):
        if not graph.rank_of(node.inputs[0]):
            return "input rank unknown or 0"
        return None

    def emit(self, node, ins, em):
        x, begin, size = ins
        k = lambda f: em.kernel("slicing", f)  # noqa: E731
        (bounds,) = em.call(1, f"{k('slice_bounds')}(np.array({x.var}.shape, np.int64), {begin.var}, {size.var}, err)", True)
        (taken,) = em.call(1, f"{k('take')}({x.var}, {bounds})", False)
        (shape,) = em.call(1, f"{k('shrunk_shape')}({bounds})", False)
        return [em.reshaped(x, taken, shape, node.out_ranks[0])]

"""StridedSlice on tensors of any rank >= 1, begin/end/shrink masks (no ellipsis or new axes)."""
from ..registry import Lowering, lowering


@lowering("StridedSlice")
class StridedSliceLowering(Lowering):
    def check(self, node, graph):
        if not graph.rank_of(node.inputs[0]):
            return "input rank unknown or 0"
        if node.attrs["ellipsis_mask"] or node.attrs["new_axis_mask"]:
            return "ellipsis / new-axis masks"
        if graph.rank_of(node.inputs[1]) != 1:
            return "slice spec rank unknown"
        return None

    def emit(self, node, ins, em):
        x, begin, end, strides = ins
        a = node.attrs
        (bounds,) = em.call(1, f"{em.kernel('slicing', 'strided_slice_bounds')}(np.array({x.var}.shape, np.int64), "
                               f"{begin.var}, {end.var}, {strides.var}, {a['begin_mask']}, {a['end_mask']}, "
                               f"{a['shrink_axis_mask']}, err)", True)
        (taken,) = em.call(1, f"{em.kernel('slicing', 'take')}({x.var}, {bounds})", False)
        (shape,) = em.call(1, f"{em.kernel('slicing', 'shrunk_shape')}({bounds})", False)
        return [em.reshaped(x, taken, shape, node.out_ranks[0])]

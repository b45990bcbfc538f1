"""StridedSlice on tensors of any rank >= 1: begin/end/shrink masks on any spec; ellipsis and
new-axis masks on a constant spec, rewritten while generating code into TF's dense form (one
entry per input dim, as tensorflow/core/util/strided_slice_op.cc builds it)."""
import numpy as np

from ..registry import Lowering, lowering
from ._common import const_input, const_value


@lowering("StridedSlice")
class StridedSliceLowering(Lowering):
    def check(self, node, graph):
        rank = graph.rank_of(node.inputs[0])
        if not rank:
            return "input rank unknown or 0"
        if graph.rank_of(node.inputs[1]) != 1:
            return "slice spec rank unknown"
        if node.attrs["ellipsis_mask"] or node.attrs["new_axis_mask"]:
            if any(const_input(graph, node, position) for position in (1, 2, 3)):
                return "ellipsis / new-axis masks with a non-constant spec"
            lengths = {const_value(graph, node.inputs[p]).size for p in (1, 2, 3)}
            if len(lengths) != 1 or dense_spec(node.attrs, lengths.pop(), rank) is None:
                return "several ellipses, or a spec TF rejects (TF raises)"
        return None

    def emit(self, node, ins, em):
        x, begin, end, strides = ins
        a = node.attrs
        masks = a["begin_mask"], a["end_mask"], a["shrink_axis_mask"]
        new_axes = None
        if a["ellipsis_mask"] or a["new_axis_mask"]:
            sources, *masks, new_axes = dense_spec(a, begin.const.size, x.rank)
            dense = [np.array([0 if s is None else int(v.const.ravel()[s]) for s in sources], np.int64)
                     for v in (begin, end)]
            dense.append(np.array([1 if s is None else int(strides.const.ravel()[s]) for s in sources], np.int64))
            begin, end, strides = (type(v)(em.const(d), "int64", 1, const=d) for v, d in zip((begin, end, strides), dense))
        k = lambda f: em.kernel("slicing", f)  # noqa: E731
        (bounds,) = em.call(1, f"{k('strided_slice_bounds')}(np.array({x.var}.shape, np.int64), "
                               f"{begin.var}, {end.var}, {strides.var}, {', '.join(em.int64(m) for m in masks)}, err)", True)
        (taken,) = em.call(1, f"{k('take')}({x.var}, {bounds})", False)
        (shape,) = em.call(1, f"{k('shrunk_shape')}({bounds})", False)
        if new_axes:
            (shape,) = em.call(1, f"{k('with_new_axes')}({shape}, {em.const(np.array(new_axes, np.int64))})", False)
        return [em.reshaped(x, taken, shape, node.out_ranks[0])]


def dense_spec(attrs, n, rank):
    """TF's dense form of a sparse slice spec of ``n`` entries over ``rank`` dims: (for each
    input dim the spec entry it takes, or None for a full range; its begin, end and shrink masks;
    the output positions of new axes). None where TF rejects the spec."""
    ellipsis, new_axis = attrs["ellipsis_mask"] & ((1 << n) - 1), attrs["new_axis_mask"]
    if bin(ellipsis).count("1") > 1:
        return None
    if not ellipsis:  # TF appends an implicit ellipsis
        ellipsis, n = 1 << n, n + 1
    at = ellipsis.bit_length() - 1
    new_after = sum(1 for i in range(at + 1, n) if new_axis >> i & 1)
    sources, begin_mask, end_mask, shrink_mask, new_axes, out = [], 0, 0, 0, [], 0
    for i in range(n):
        if i == at:
            while len(sources) < min(rank - (n - i) + 1 + new_after, rank):
                begin_mask |= 1 << len(sources)
                end_mask |= 1 << len(sources)
                sources.append(None)
                out += 1
        elif new_axis >> i & 1:
            new_axes.append(out)
            out += 1
        else:
            if len(sources) == rank:
                return None
            d = len(sources)
            begin_mask |= (attrs["begin_mask"] >> i & 1) << d
            end_mask |= (attrs["end_mask"] >> i & 1) << d
            if attrs["shrink_axis_mask"] >> i & 1:
                shrink_mask |= 1 << d
            else:
                out += 1
            sources.append(i)
    return (sources, begin_mask, end_mask, shrink_mask, new_axes) if len(sources) == rank else None

"""OneHot(indices, depth, on_value, off_value, axis): depth/on/off must be scalars (else TF)."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("OneHot")
class OneHotLowering(Lowering):
    def const_is_value(self, raw, index, value):
        return True  # the depth too: indicator columns of other sizes share a template

    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "indices rank unknown"
        if any(graph.rank_of(r) != 0 for r in node.inputs[1:]):
            return "depth, on_value and off_value must be scalars"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        indices, depth, on, off = ins
        rank = indices.rank
        axis = node.attrs.get("axis", -1)
        axis = rank if axis == -1 else axis
        size = lambda dims: " * ".join(f"{indices.var}.shape[{d}]" for d in dims) or "1"
        view = f"np.ascontiguousarray({indices.var}).reshape(({size(range(axis))}, {size(range(axis, rank))}))"
        (flat,) = em.call(1, f"{em.kernel('one_hot', 'one_hot')}({view}, {depth.var}, {on.var}, {off.var}, err)", True)
        dims = [f"{indices.var}.shape[{d}]" for d in range(axis)] + [f"{flat}.shape[1]"] + \
               [f"{indices.var}.shape[{d}]" for d in range(axis, rank)]
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape(({', '.join(dims)},))")
        return [out]

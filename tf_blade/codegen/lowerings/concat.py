"""ConcatV2 along a constant axis."""
from ..registry import Lowering, lowering
from ._common import const_input, numeric_only


@lowering("ConcatV2")
class ConcatLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) in (None, 0) for r in node.inputs[:-1]):
            return "input rank unknown"
        return const_input(graph, node, len(node.inputs) - 1) or numeric_only(node, graph)

    def emit(self, node, ins, em):
        *parts, axis = ins
        rank = parts[0].rank
        ax = int(axis.const.ravel()[0])
        ax = ax + rank if ax < 0 else ax
        args = "".join(f"np.ascontiguousarray({p.var}), " for p in parts)
        flat, shape = em.call(2, f"{em.kernel('concat', 'concat')}(({args}), {ax}, err)", True)
        return [em.reshaped(parts[0], flat, shape, rank)]

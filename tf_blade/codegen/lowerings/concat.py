"""ConcatV2 along a constant axis."""
from ..registry import Lowering, lowering
from ._common import const_input, grappler_hoists_into, numeric_only, part_tables_call


@lowering("ConcatV2")
class ConcatLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) in (None, 0) for r in node.inputs[:-1]):
            return "input rank unknown"
        if grappler_hoists_into(node, graph):
            return "TF's Grappler hoists its inputs' unary ops (Exp, Log1p ...) across it"
        return const_input(graph, node, len(node.inputs) - 1) or numeric_only(node, graph)

    def emit(self, node, ins, em):
        *parts, axis = ins
        rank = parts[0].rank
        ax = int(axis.const.ravel()[0])
        ax = ax + rank if ax < 0 else ax
        flat, shape = concat_call(em, [p.var for p in parts], ax, node.out_dtypes[0])
        return [em.reshaped(parts[0], flat, shape, rank)]


def concat_call(em, parts, axis: int, dtype: str):
    """(flat, shape): the concat kernel over the arrays ``parts`` (expressions, any layout) along
    ``axis`` (non-negative)."""
    return part_tables_call(em, 2, em.kernel("concat", "concat"), [parts], f"{em.int64(axis)}, np.empty(0, np.{dtype})")

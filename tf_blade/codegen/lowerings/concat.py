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
        flat, shape = concat_call(em, [p.var for p in parts], ax, node.out_dtypes[0])
        return [em.reshaped(parts[0], flat, shape, rank)]


def concat_call(em, parts, axis: int, dtype: str):
    """(flat, shape): the concat kernel over the arrays ``parts`` (expressions, any layout) along
    ``axis`` (non-negative), through a part table (kernels/concat.py) the parts outlive."""
    held = em.tmp()
    em.line(f"{held} = ({''.join(p + ', ' for p in parts)})")
    outs = em.call(2, f"{em.kernel('concat', 'concat')}({em.kernel('concat', 'part_table')}({held}), {em.int64(axis)}, "
                      f"np.empty(0, np.{dtype}), err)", False)
    em.line(f"{em.kernel('concat', 'keep_alive')}({held})")
    em.check()
    return outs

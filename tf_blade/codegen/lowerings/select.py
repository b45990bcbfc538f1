"""Select (v1: a vector condition may pick rows) and SelectV2 (broadcasting)."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Select", "SelectV2")
class SelectLowering(Lowering):
    def check(self, node, graph):
        ranks = [graph.rank_of(r) for r in node.inputs]
        if any(r is None for r in ranks):
            return "input rank unknown"
        cond, t, e = ranks
        # Select (v1) does not broadcast: a scalar condition picks all of then or else, a vector
        # one rows of them, any other needs three inputs of one shape
        if node.op == "Select" and (t != e or (cond == 1 and t == 0) or cond not in (0, 1, t)):
            return "Select inputs of ranks TF rejects (Select does not broadcast)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        cond, t, e = ins
        out = em.tmp()
        if node.op == "Select" and cond.rank == 0:
            return em.call(1, f"{em.kernel('elementwise', 'select_scalar')}({cond.var}, {t.var}, {e.var}, err)", True)
        if node.op == "Select" and cond.rank == 1 and t.rank > 1:
            return em.call(1, f"{em.kernel('elementwise', 'select_rows')}({cond.var}, {t.var}, {e.var}, err)", True)
        if node.op == "Select":  # three inputs of one rank
            em.call(0, f"{em.kernel('elementwise', 'check_select_shapes')}({cond.var}, {t.var}, {e.var}, err)", True)
            em.line(f"{out} = {em.kernel('elementwise', 'select_same_shape')}({cond.var}, {t.var}, {e.var})")
            return [out]
        em.call(0, f"{em.kernel('elementwise', 'check_select_v2')}({cond.var}, {t.var}, {e.var}, "
                   f"{em.int64(cond.rank)}, {em.int64(t.rank)}, {em.int64(e.rank)}, err)", True)
        if cond.rank == t.rank == e.rank:  # same rank: equal shapes at run time take the fast loop
            same = f"{cond.var}.shape == {t.var}.shape and {t.var}.shape == {e.var}.shape"
            em.line(f"if {same}:")
            em.line(f"    {out} = {em.kernel('elementwise', 'select_same_shape')}({cond.var}, {t.var}, {e.var})")
            em.line("else:")
            select_broadcast(em, out, cond.var, t.var, e.var, node.out_ranks[0], indent="    ")
        else:
            select_broadcast(em, out, cond.var, t.var, e.var, node.out_ranks[0])
        return [out]


def select_broadcast(em, out: str, cond: str, then: str, other: str, rank: int, indent=""):
    """``out`` = the library's broadcasting select of three arrays (one dtype for ``then`` and
    ``other``), an array of the output's ``rank``; its lines at ``indent``."""
    flat, shape = em.tmp(), em.tmp()
    em.line(f"{indent}{flat}, {shape} = {em.kernel('elementwise', 'select_broadcast')}({cond}, {then}, {other})")
    em.line(f"{indent}{out} = {em.reshape(flat, shape, rank)}")

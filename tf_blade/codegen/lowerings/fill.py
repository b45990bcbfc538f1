"""Fill(dims, value): the output's rank is the static length of ``dims``."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Fill")
class FillLowering(Lowering):
    def check(self, node, graph):
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        dims, value = ins
        rank = node.out_ranks[0]
        (checked,) = em.call(1, f"{em.kernel('fill', 'checked_dims')}({dims.var}, err)", True)
        (scalar,) = em.call(1, f"{em.kernel('fill', 'scalar_value')}({value.var}, {em.int64(value.rank)}, err)", True)
        shape = ", ".join(f"{checked}[{i}]" for i in range(rank)) if rank else "1"
        out = em.tmp()
        em.line(f"{out} = np.full(({shape},), {scalar}, np.{node.out_dtypes[0]})")
        return [out]

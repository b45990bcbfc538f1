"""Shape: the runtime dims of its input as int32/int64."""
from ..registry import Lowering, lowering
from ._common import unsupported_dtype


@lowering("Shape")
class ShapeLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None:
            return "input rank unknown"
        return unsupported_dtype(node)

    def emit(self, node, ins, em):
        x = ins[0]
        out = em.tmp()
        em.line(f"{out} = np.empty({x.rank}, np.{node.out_dtypes[0]})")
        for d in range(x.rank):
            em.line(f"{out}[{d}] = {x.var}.shape[{d}]")
        return [out]

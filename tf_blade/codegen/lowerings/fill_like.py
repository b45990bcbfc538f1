"""ZerosLike / OnesLike."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("ZerosLike", "OnesLike")
class FillLikeLowering(Lowering):
    def check(self, node, graph):
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        func = "zeros_like" if node.op == "ZerosLike" else "ones_like"
        out = em.tmp()
        em.line(f"{out} = np.{func}({ins[0].var})")
        return [out]

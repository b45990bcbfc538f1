"""Cast between numeric types (C++ static_cast semantics, as TF's CPU kernel)."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Cast")
class CastLowering(Lowering):
    def check(self, node, graph):
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        out = em.tmp()
        dtype = node.out_dtypes[0]
        if dtype == "bool":
            em.line(f"{out} = {ins[0].var} != 0")
        else:
            em.line(f"{out} = {ins[0].var}.astype(np.{dtype})")
        return [out]

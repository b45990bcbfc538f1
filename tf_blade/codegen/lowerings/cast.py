"""Cast between numeric types (C++ static_cast semantics, as TF's CPU kernel).

A float outside an unsigned type's range has no defined C++ conversion, and TF's answer depends
on its code path: float32 -> uint8 saturates in its vector loop and wraps in its scalar one,
-129.7 -> uint32 gives 4294967167 but NaN gives 0 (fuzz rounds 3 and 4). Such casts stay in TF,
so they keep TF's answer; float to signed integers match TF's (x86's conversion, both sides).
"""
from ..dtypes import FLOAT, UNSIGNED
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Cast")
class CastLowering(Lowering):
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) in FLOAT and node.out_dtypes[0] in UNSIGNED:
            return "float to unsigned integer (TF's out-of-range answers are platform-defined)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        out = em.tmp()
        dtype = node.out_dtypes[0]
        if dtype == "bool":
            em.line(f"{out} = {ins[0].var} != 0")
        else:
            em.line(f"{out} = {ins[0].var}.astype(np.{dtype})")
        return [out]

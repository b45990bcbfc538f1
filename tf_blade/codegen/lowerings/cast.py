"""Cast between numeric types (C++ static_cast semantics, as TF's CPU kernel).

A float outside an unsigned, int8 or int16 type's range has no defined C++ conversion, and TF's
answer depends on its code path: in its vector loop it saturates (300.7 -> int8 127, 40000.0 ->
int16 32767), in its scalar one (a tensor's last elements) it wraps (44, -25536), and -129.7 ->
uint32 gives 4294967167 but NaN gives 0 (fuzz rounds 3 and 4, then probed by tensor length). Such
casts stay in TF, so they keep TF's answer. Float to int32 and int64 match TF's at every length
(x86's conversion, both sides), and so do integer casts, which wrap.
"""
from ..dtypes import FLOAT, INT8, INT16, UNSIGNED
from ..registry import Lowering, lowering
from ._common import numeric_only

_BY_CODE_PATH = UNSIGNED | {INT8, INT16}  # targets whose out-of-range float answers TF's path decides


@lowering("Cast")
class CastLowering(Lowering):
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) in FLOAT and node.out_dtypes[0] in _BY_CODE_PATH:
            return "float to unsigned, int8 or int16 (TF's out-of-range answers depend on its code path)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        dtype = node.out_dtypes[0]
        if ins[0].dtype == dtype:  # RaggedWhere's checks cast int64 to int64 (Grappler's arithmetic pass is off)
            return [ins[0]]
        out = em.tmp()
        if dtype == "bool":
            em.line(f"{out} = {ins[0].var} != 0")
        else:
            em.line(f"{out} = {ins[0].var}.astype(np.{dtype})")
        return [out]

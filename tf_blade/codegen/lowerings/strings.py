"""AsString (integers and booleans, TF's printf formats) and StringToHashBucketFast (FarmHash
Fingerprint64)."""
from ...kernels.as_string import FLAGS
from ..dtypes import BOOL, STRING
from ..registry import Lowering, lowering

INTEGER_AS_STRING = {3, 5, 6, 9}  # int32, int16, int8, int64: the integers TF's AsString formats


@lowering("AsString")
class AsStringLowering(Lowering):
    def check(self, node, graph):
        a = node.attrs
        dtype = graph.dtype_of(node.inputs[0])
        if dtype not in INTEGER_AS_STRING and dtype != BOOL:
            return "only int8/int16/int32/int64/bool inputs (float formatting is printf's)"
        if a.get("scientific") or a.get("shortest") or a.get("precision", -1) > -1:
            return "scientific, shortest or precision with integers (TF raises)"
        if a.get("fill", "") not in FLAGS:
            return "fill other than '', '-', '0', '+', ' ', '#' (TF raises)"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        flat = f"np.ascontiguousarray({x.var}).ravel()"
        if x.dtype == "bool":
            call = f"{em.kernel('as_string', 'as_string_bools')}({flat}, err)"
        else:
            width = node.attrs.get("width", -1)
            flag = FLAGS[node.attrs.get("fill", "")]
            call = f"{em.kernel('as_string', 'as_string_ints')}({flat}, {em.int64(width)}, {em.int64(flag)}, err)"
        (tstrings,) = em.call(1, call, True)
        return [em.made_strings(tstrings, f"np.arange({x.var}.size).reshape({x.var}.shape)")]


@lowering("StringToHashBucketFast")
class StringToHashBucketFastLowering(Lowering):
    runtime_attrs = ("num_buckets",)  # a parameter: columns differing only here share a template
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) != STRING:
            return "input must be strings"
        return None

    def emit(self, node, ins, em):
        s = ins[0]
        buckets = node.attrs["num_buckets"]
        out = em.tmp()
        em.line(f"{out} = {em.kernel('farmhash', 'string_to_hash_bucket_fast')}("
                f"np.ascontiguousarray({s.var}).ravel(), {s.off}, {s.dat}, {buckets}).reshape({s.var}.shape)")
        return [out]

"""AsString (integers, default formatting) and StringToHashBucketFast (FarmHash Fingerprint64)."""
from ..dtypes import INT32_64, STRING
from ..registry import Lowering, lowering


@lowering("AsString")
class AsStringLowering(Lowering):
    def check(self, node, graph):
        a = node.attrs
        if graph.dtype_of(node.inputs[0]) not in INT32_64:
            return "only int32/int64 inputs"
        if a.get("width", -1) != -1 or a.get("fill", "") != "" or a.get("scientific") or a.get("shortest"):
            return "non-default formatting"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        out = em.tmp()
        em.line(f"{out}_off = {em.kernel('farmhash', 'int_to_decimal_tstrings')}(np.ascontiguousarray({x.var}).ravel())")
        em.line(f"{out}_dat = {out}_off[:0]")
        em.line(f"{out} = np.arange({x.var}.size).reshape({x.var}.shape)")
        return [out]


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

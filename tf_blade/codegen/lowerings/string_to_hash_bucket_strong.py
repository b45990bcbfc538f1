"""StringToHashBucketStrong: keyed SipHash-2-4 of each string, modulo num_buckets."""
from ..dtypes import STRING
from ..registry import Lowering, lowering


@lowering("StringToHashBucketStrong")
class StringToHashBucketStrongLowering(Lowering):
    runtime_attrs = ("num_buckets",)

    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) != STRING:
            return "input must be strings"
        if len(node.attrs.get("key", ())) != 2:
            return "key must have 2 elements"  # TF's kernel refuses it when built
        return None

    def emit(self, node, ins, em):
        s = ins[0]
        k0, k1 = (k & 0xFFFFFFFFFFFFFFFF for k in node.attrs["key"])  # TF memcpys int64 -> uint64
        out = em.tmp()
        em.line(f"{out} = {em.kernel('siphash', 'string_to_hash_bucket_strong')}("
                f"np.ascontiguousarray({s.var}).ravel(), {s.off}, {s.dat}, {node.attrs['num_buckets']}, "
                f"np.uint64({k0}), np.uint64({k1})).reshape({s.var}.shape)")
        return [out]

"""_BladeHashInts: StringToHashBucketFast(AsString(int ids)) without the strings (see
feature_column/int_hash.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeHashInts")
class HashIntsLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # as StringToHashBucketFast: columns share a template

    def emit(self, node, ins, em):
        x = ins[0]
        out = em.tmp()
        em.line(f"{out} = {em.kernel('farmhash', 'hash_ints_to_bucket')}("
                f"np.ascontiguousarray({x.var}).ravel(), {node.attrs['num_buckets']}).reshape({x.var}.shape)")
        return [out]

"""_BladeTableFindOrBucket: a frozen vocabulary's lookup with its out-of-vocabulary buckets, each
string hashed once (see feature_column/vocabulary_oov.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeTableFindOrBucket")
class TableFindOrBucketLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # as StringToHashBucketFast: columns share a template

    def const_is_value(self, raw, index, value):
        return True  # the frozen table's arrays and its size are only read, as _BladeTableFind's

    def emit(self, node, ins, em):
        keys, default, slots, key_offsets, key_data, values, size = ins
        (flat,) = em.call(1, f"{em.kernel('table_lookup', 'find_string_or_bucket')}({keys.var}, {keys.off}, "
                             f"{keys.dat}, {slots.var}, {key_offsets.var}, {key_data.var}, {values.var}, "
                             f"{default.var}, {node.attrs['num_buckets']}, {size.var})", False)
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape({keys.var}.shape)")
        return [out]

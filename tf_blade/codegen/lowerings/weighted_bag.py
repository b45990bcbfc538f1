"""_BladeWeightedBag: the fused tail of a weighted embedding column; _BladeWeightedStringBag,
_BladeWeightedVocabularyBag and _BladeWeightedIntBag: the whole column over dense hashed strings,
vocabulary strings or integer ids and dense weights (see feature_column/weighted_bag.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeWeightedBag")
class WeightedBagLowering(SpecOnlyLowering):
    def emit(self, node, ins, em):
        indices, ids, weights, dense_shape, table = ins
        return em.call(1, f"{em.kernel('weighted_bag', 'weighted_bag')}({indices.var}, {ids.var}, {weights.var}, "
                          f"{dense_shape.var}, {table.var}, {em.int64(node.attrs['mode'])}, err)", True)


@lowering("_BladeWeightedStringBag")
class WeightedStringBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # columns differing only in bucket count share a template

    def emit(self, node, ins, em):
        strings, new_shape, weights, table = ins
        return em.call(1, f"{em.kernel('weighted_bag', 'dense_weighted_string_bag')}("
                          f"np.ascontiguousarray({strings.var}), {strings.off}, {strings.dat}, {new_shape.var}, "
                          f"np.ascontiguousarray({weights.var}), {table.var}, {node.attrs['num_buckets']}, "
                          f"{em.int64(node.attrs['mode'])}, err)", True)


@lowering("_BladeWeightedIntBag")
class WeightedIntBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # as _BladeIntBag

    def const_is_value(self, raw, index, value):
        return index >= 4  # the ignore value and vocabulary, only read: as _BladeIntBag's

    def emit(self, node, ins, em):
        x, new_shape, weights, table, ignore, default, slots, keys, values = ins
        return em.call(1, f"{em.kernel('weighted_bag', 'dense_weighted_int_bag')}(np.ascontiguousarray({x.var}), "
                          f"{new_shape.var}, np.ascontiguousarray({weights.var}), {table.var}, {ignore.var}, "
                          f"{em.int64(node.attrs['kind'])}, {default.var}, {slots.var}, {keys.var}, {values.var}, "
                          f"{node.attrs['num_buckets']}, {em.int64(node.attrs['mode'])}, err)", True)


@lowering("_BladeWeightedVocabularyBag")
class WeightedVocabularyBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # as _BladeVocabularyBag

    def const_is_value(self, raw, index, value):
        return index >= 4  # the frozen vocabulary, only read: as _BladeVocabularyBag's

    def emit(self, node, ins, em):
        strings, new_shape, weights, table, default, slots, key_offsets, key_data, values = ins[:9]
        offset = ins[9] if len(ins) > 9 else default  # the table's size; unread without OOV buckets
        return em.call(1, f"{em.kernel('weighted_bag', 'dense_weighted_vocabulary_bag')}("
                          f"np.ascontiguousarray({strings.var}), {strings.off}, {strings.dat}, {new_shape.var}, "
                          f"np.ascontiguousarray({weights.var}), {table.var}, {default.var}, {slots.var}, "
                          f"{key_offsets.var}, {key_data.var}, {values.var}, {node.attrs['num_buckets']}, "
                          f"{offset.var}, {em.int64(node.attrs['mode'])}, err)", True)

"""_BladeVocabularyBag: a vocabulary embedding column over dense strings (see
feature_column/vocabulary_bag.py)."""
from ..registry import SpecOnlyLowering, lowering

_INDEX = 3  # inputs from here on are the frozen vocabulary: default, index arrays, [size]


@lowering("_BladeVocabularyBag")
class VocabularyBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # columns differing only in OOV bucket count share a template

    def const_is_value(self, raw, index, value):
        return index >= _INDEX  # only read, as _BladeTableFind's: columns of other vocabularies share a template

    def emit(self, node, ins, em):
        strings, new_shape, table, default, slots, key_offsets, key_data, values = ins[:8]
        offset = ins[8] if len(ins) > 8 else default  # the table's size; unread without OOV buckets
        return em.call(1, f"{em.kernel('vocabulary_bag', 'vocabulary_bag')}(np.ascontiguousarray({strings.var}), "
                          f"{strings.off}, {strings.dat}, {new_shape.var}, {table.var}, {default.var}, "
                          f"{slots.var}, {key_offsets.var}, {key_data.var}, {values.var}, "
                          f"{node.attrs['num_buckets']}, {offset.var}, {bool(node.attrs['drop_negative'])}, "
                          f"{em.int64(node.attrs['mode'])}, err)", True)

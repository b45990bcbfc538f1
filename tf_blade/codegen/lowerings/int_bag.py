"""_BladeIntBag: an identity, integer-vocabulary or hashed-integer embedding column over a dense
integer input (see feature_column/int_bag.py)."""
from ..registry import SpecOnlyLowering, lowering

_IGNORE = 3  # inputs from here on: the ignore value, then the frozen vocabulary (default, slots, keys, values)


@lowering("_BladeIntBag")
class IntBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # as _BladeHashInts: hashed columns share a template

    def const_is_value(self, raw, index, value):
        return index >= _IGNORE  # only read: columns of other vocabularies or ignore values share a template

    def emit(self, node, ins, em):
        x, new_shape, table, ignore, default, slots, keys, values = ins
        return em.call(1, f"{em.kernel('int_bag', 'int_bag')}(np.ascontiguousarray({x.var}), {new_shape.var}, "
                          f"{table.var}, {ignore.var}, {em.int64(node.attrs['kind'])}, {default.var}, {slots.var}, "
                          f"{keys.var}, {values.var}, {node.attrs['num_buckets']}, "
                          f"{bool(node.attrs['drop_negative'])}, {em.int64(node.attrs['mode'])}, err)", True)

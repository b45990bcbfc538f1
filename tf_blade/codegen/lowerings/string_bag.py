"""_BladeStringBag: a hash-bucket embedding column over dense strings (see feature_column/string_bag.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeStringBag")
class StringBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # columns differing only in bucket count share a template

    def emit(self, node, ins, em):
        strings, new_shape, table = ins
        return em.call(1, f"{em.kernel('string_bag', 'string_bag')}(np.ascontiguousarray({strings.var}), "
                          f"{strings.off}, {strings.dat}, {new_shape.var}, {table.var}, "
                          f"{node.attrs['num_buckets']}, {em.int64(node.attrs['mode'])}, err)", True)

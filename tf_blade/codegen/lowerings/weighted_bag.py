"""_BladeWeightedBag: the fused tail of a weighted embedding column, and _BladeWeightedStringBag:
the whole column over dense hashed strings and weights (see feature_column/weighted_bag.py)."""
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

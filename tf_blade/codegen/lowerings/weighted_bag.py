"""_BladeWeightedBag: the fused tail of a weighted embedding column (see feature_column/weighted_bag.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeWeightedBag")
class WeightedBagLowering(SpecOnlyLowering):
    def emit(self, node, ins, em):
        indices, ids, weights, dense_shape, table = ins
        return em.call(1, f"{em.kernel('weighted_bag', 'weighted_bag')}({indices.var}, {ids.var}, {weights.var}, "
                          f"{dense_shape.var}, {table.var}, {em.int64(node.attrs['mode'])}, err)", True)

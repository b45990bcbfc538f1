"""_BladeEmbeddingBag: the fused tail of an embedding column (see feature_column/embedding_bag.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeEmbeddingBag")
class EmbeddingBagLowering(SpecOnlyLowering):
    def emit(self, node, ins, em):
        indices, ids, dense_shape, table = ins
        return em.call(1, f"{em.kernel('embedding_bag', 'embedding_bag')}({indices.var}, {ids.var}, "
                          f"{dense_shape.var}, {table.var}, {em.int64(node.attrs['mode'])}, err)", True)

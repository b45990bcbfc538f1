"""_BladeSparseStringBag: a hash-bucket embedding column over a SparseTensor of strings (see
feature_column/sparse_string_bag.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladeSparseStringBag")
class SparseStringBagLowering(SpecOnlyLowering):
    runtime_attrs = ("num_buckets",)  # columns differing only in bucket count share a template

    def emit(self, node, ins, em):
        indices, values, dense_shape, new_shape, table = ins
        return em.call(1, f"{em.kernel('sparse_string_bag', 'sparse_string_bag')}({indices.var}, "
                          f"np.ascontiguousarray({values.var}), {values.off}, {values.dat}, {dense_shape.var}, "
                          f"{new_shape.var}, {table.var}, {node.attrs['num_buckets']}, "
                          f"{em.int64(node.attrs['mode'])}, err)", True)

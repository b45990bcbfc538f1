"""_BladeBucketBag: a bucketized column's embedding (see feature_column/bucket_bag.py)."""
from ..registry import SpecOnlyLowering, lowering
from .bucketize import BucketizeLowering


@lowering("_BladeBucketBag")
class BucketBagLowering(SpecOnlyLowering):
    runtime_attrs = ("columns",)
    array_attrs = ("boundaries",)  # columns that differ only in their boundaries share a template
    attr_array = BucketizeLowering.attr_array  # the boundaries as Bucketize compares them; x is input 0 too

    def emit(self, node, ins, em):
        x, new_shape, table = ins
        return em.call(1, f"{em.kernel('bucket_bag', 'bucket_bag')}(np.ascontiguousarray({x.var}), {new_shape.var}, "
                          f"{table.var}, {node.attrs['boundaries']}, {node.attrs['columns']}, "
                          f"{em.int64(node.attrs['mode'])}, err)", True)

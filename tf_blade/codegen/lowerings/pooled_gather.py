"""_BladePooledGather: Sum/Mean over axis 1 of a gather (see feature_column/pooled_gather.py)."""
from ..registry import SpecOnlyLowering, lowering


@lowering("_BladePooledGather")
class PooledGatherLowering(SpecOnlyLowering):
    def emit(self, node, ins, em):
        table, ids = ins
        return em.call(1, f"{em.kernel('pooled_gather', 'pooled_gather')}({table.var}, {ids.var}, "
                          f"{node.attrs['mean']}, {node.attrs['strict']}, err)", True)

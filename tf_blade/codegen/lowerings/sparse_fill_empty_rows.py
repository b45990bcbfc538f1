"""SparseFillEmptyRows (all four outputs), numeric values."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("SparseFillEmptyRows")
class SparseFillEmptyRowsLowering(Lowering):
    def check(self, node, graph):
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        indices, values, shape, default = ins
        return em.call(4, f"{em.kernel('sparse_fill_empty_rows', 'sparse_fill_empty_rows')}("
                          f"{indices.var}, {values.var}, {shape.var}, {default.var}, err)", True)

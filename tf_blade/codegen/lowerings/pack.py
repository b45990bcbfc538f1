"""Pack (tf.stack) of equal-shaped tensors along any axis: each input gains a size-1 dim at the
axis and the concat kernel joins them (scalars: written straight into a vector)."""
from ..registry import Lowering, lowering
from ._common import numeric_only
from .concat import concat_call


@lowering("Pack")
class PackLowering(Lowering):
    def const_is_value(self, raw, index, value):
        return True  # (an indicator column's [-1, depth] shape)

    def check(self, node, graph):
        ranks = {graph.rank_of(r) for r in node.inputs}
        if len(ranks) != 1 or None in ranks:
            return "inputs of unknown or different ranks (TF raises)"
        rank = ranks.pop()
        if not -(rank + 1) <= node.attrs.get("axis", 0) <= rank:
            return "axis out of range (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        rank = ins[0].rank
        out = em.tmp()
        if rank == 0:
            em.line(f"{out} = np.empty({len(ins)}, np.{node.out_dtypes[0]})")
            for i, v in enumerate(ins):
                em.line(f"{out}[{i}] = {v.var}[0]")
            return [out]
        axis = node.attrs.get("axis", 0)
        axis = axis + rank + 1 if axis < 0 else axis
        first = f"np.array({ins[0].var}.shape, np.int64)"
        for i, v in enumerate(ins[1:], 1):
            em.call(0, f"{em.kernel('concat', 'check_same_shape')}({first}, np.array({v.var}.shape, np.int64), {em.int64(i)}, err)", True)
        parts = []
        for v in ins:
            dims = [f"{v.var}.shape[{d}]" for d in range(rank)]
            dims.insert(axis, "1")
            parts.append(f"np.ascontiguousarray({v.var}).reshape(({', '.join(dims)},))")
        flat, shape = concat_call(em, parts, axis, node.out_dtypes[0])
        return [em.reshaped(ins[0], flat, shape, rank + 1)]

"""Pack (tf.stack) along axis 0 of scalars or equal-shaped vectors."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Pack")
class PackLowering(Lowering):
    def check(self, node, graph):
        ranks = {graph.rank_of(r) for r in node.inputs}
        if node.attrs.get("axis", 0) != 0 or not ranks <= {0, 1}:
            return "only axis 0 of scalars or vectors"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        dtype = node.out_dtypes[0]
        out = em.tmp()
        if ins[0].rank == 0:
            em.line(f"{out} = np.empty({len(ins)}, np.{dtype})")
            for i, v in enumerate(ins):
                em.line(f"{out}[{i}] = {v.var}[0]")
            return [out]
        parts = ", ".join(f"np.ascontiguousarray({v.var}).reshape((1, {v.var}.shape[0]))" for v in ins)
        flat, shape = em.call(2, f"{em.kernel('concat', 'concat')}(({parts},), 0, err)", True)
        em.line(f"{out} = {flat}.reshape(({shape}[0], {shape}[1])).astype(np.{dtype})")
        return [out]

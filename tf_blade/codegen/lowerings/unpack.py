"""Unpack (tf.unstack): ``num`` outputs, each the input with ``axis`` removed."""
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Unpack")
class UnpackLowering(Lowering):
    def check(self, node, graph):
        rank = graph.rank_of(node.inputs[0])
        if rank is None:
            return "input rank unknown"
        if rank == 0 or not -rank <= node.attrs.get("axis", 0) < rank:
            return "axis out of range (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        x = ins[0]
        num = node.attrs["num"]
        axis = node.attrs.get("axis", 0) % x.rank
        em.call(0, f"{em.kernel('shape_ops', 'check_unpack')}({x.var}, {em.int64(axis)}, {em.int64(num)}, err)", True)
        outs = []
        for i in range(num):
            out = em.tmp()
            if x.rank == 1:  # a scalar travels as a (1,) array
                em.line(f"{out} = {x.var}[{i}:{i + 1}].copy()")
            else:
                index = ", ".join([":"] * axis + [str(i)] + [":"] * (x.rank - axis - 1))
                em.line(f"{out} = np.ascontiguousarray({x.var}[{index}])")
            outs.append(out)
        return outs

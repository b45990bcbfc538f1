"""GatherNd (also on strings: it moves ids, the pool stays)."""
from ..registry import Lowering, lowering


@lowering("GatherNd")
class GatherNdLowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) is None or graph.rank_of(node.inputs[1]) is None:
            return "input rank unknown"
        return None

    def texts(self, raw, spec):
        return [f", node name: {raw['name']}"]  # its message ends as TF's does

    def emit(self, node, ins, em):
        params, idx = ins
        flat, shape = em.call(2, f"{em.kernel('gather_nd', 'gather_nd')}({params.var}, {idx.var}, "
                                 f"{node.attrs['texts'][0]}, err)", True)
        return [em.reshaped(params, flat, shape, node.out_ranks[0])]

"""Tile for rank-1 and rank-2 inputs."""
from ..registry import Lowering, lowering


@lowering("Tile")
class TileLowering(Lowering):
    def check(self, node, graph):
        return None if graph.rank_of(node.inputs[0]) in (1, 2) else "only ranks 1 and 2"

    def emit(self, node, ins, em):
        x, multiples = ins
        (out,) = em.call(1, f"{em.kernel('tile', f'tile_{x.rank}d')}({x.var}, {multiples.var}, err)", True)
        if x.is_string:  # the tiled string ids still point into x's pool
            em.share_pool(out, x)
        return [out]

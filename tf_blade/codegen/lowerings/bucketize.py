"""Bucketize with its float32 ``boundaries`` attr frozen into the kernel as a constant."""
import numpy as np

from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Bucketize")
class BucketizeLowering(Lowering):
    def check(self, node, graph):
        bounds = node.attrs.get("boundaries", [])
        if any(b > a for a, b in zip(bounds[1:], bounds)):
            return "boundaries not sorted (TF raises)"
        return numeric_only(node, graph)

    def emit(self, node, ins, em):
        x = ins[0]
        dtype = np.float64 if x.dtype == "float64" else np.float32
        bounds = em.const(np.array(node.attrs.get("boundaries", []), np.float32).astype(dtype), "B")
        (flat,) = em.call(1, f"{em.kernel('bucketize', 'bucketize')}(np.ascontiguousarray({x.var}), {bounds})", False)
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape({x.var}.shape)")
        return [out]

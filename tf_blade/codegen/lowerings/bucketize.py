"""Bucketize, its float32 ``boundaries`` attr given to its part as an array: columns that differ
only in their boundaries share a template (one compile)."""
import numpy as np

from ..dtypes import numpy_name
from ..parts import ref_meta
from ..registry import Lowering, lowering
from ._common import numeric_only


@lowering("Bucketize")
class BucketizeLowering(Lowering):
    array_attrs = ("boundaries",)

    def check(self, node, graph):
        bounds = node.attrs.get("boundaries", [])
        if any(b > a for a, b in zip(bounds[1:], bounds)):
            return "boundaries not sorted (TF raises)"
        return numeric_only(node, graph)

    def attr_array(self, raw, spec, attr):
        # TF keeps them as float32 and compares in the input's type (kernels/bucketize.py)
        dtype = np.float64 if numpy_name(ref_meta(spec, raw["inputs"][0])[0]) == "float64" else np.float32
        return np.array(raw["attrs"].get("boundaries", []), np.float32).astype(dtype)

    def emit(self, node, ins, em):
        x = ins[0]
        (flat,) = em.call(1, f"{em.kernel('bucketize', 'bucketize')}(np.ascontiguousarray({x.var}), {node.attrs['boundaries']})", False)
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape({x.var}.shape)")
        return [out]

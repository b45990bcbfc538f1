"""Const: becomes a module-level array the compiled code freezes in."""
import base64

import numpy as np

from ...graph.attrs import bits_dtype
from ...kernels.strings import tstrings_from_bytes
from ..emitter import Value
from ..registry import Lowering, lowering


def const_array(attr_value):
    dtype, shape, values = attr_value["dtype"], attr_value["shape"], attr_value["values"]
    if dtype == "string":
        return np.array([base64.b64decode(v) for v in values], dtype=object).reshape(shape)
    if "bits" in attr_value:  # a float tensor holding NaNs (graph/attrs.py)
        return np.array(attr_value["bits"], dtype=bits_dtype(dtype)).view(dtype).reshape(shape)
    return np.array(values, dtype=dtype).reshape(shape)


@lowering("Const")
class ConstLowering(Lowering):
    def emit(self, node, ins, em):
        value = const_array(node.attrs["value"])
        rank = node.out_ranks[0]
        if node.out_dtypes[0] != "string":
            return [Value(em.const(value), node.out_dtypes[0], rank, const=value)]
        flat = list(value.ravel())
        out = Value(em.const(np.arange(len(flat), dtype=np.int64).reshape(value.shape)), "string", rank,
                    const=value)
        em.line(f"{out.off} = {em.const(tstrings_from_bytes(flat))}")
        em.line(f"{out.dat} = {out.off}[:0]")
        return [out]

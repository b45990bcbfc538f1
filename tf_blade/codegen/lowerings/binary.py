"""Broadcasting binary ops: comparisons (numeric, and string against a constant) and arithmetic."""
from ..dtypes import STRING
from ..registry import Lowering, lowering
from ._common import unsupported_dtype

_SYMBOL = {
    "Equal": "==", "NotEqual": "!=", "Greater": ">", "GreaterEqual": ">=", "Less": "<",
    "LessEqual": "<=", "Add": "+", "AddV2": "+", "Sub": "-", "Mul": "*",
}


@lowering(*_SYMBOL)
class BinaryLowering(Lowering):
    def check(self, node, graph):
        if any(graph.rank_of(r) is None for r in node.inputs):
            return "input rank unknown"
        if any(graph.dtype_of(r) == STRING for r in node.inputs):
            if node.op not in ("Equal", "NotEqual"):
                return "string arithmetic"
            if graph.producer(node.inputs[1]).op != "Const":
                return "strings compare only against a constant"
        return unsupported_dtype(node)

    def emit(self, node, ins, em):
        a, b = ins
        out = em.tmp()
        if a.is_string:
            (text,) = b.const.ravel()  # check() guarantees a one-element constant
            eq = f"{em.kernel('elementwise', 'string_equals_const')}({a.var}, {a.off}, {a.dat}, {em.const(_bytes(text))})"
            em.line(f"{out} = {eq}" if node.op == "Equal" else f"{out} = ~{eq}")
            return [out]
        em.call(1, f"{em.kernel('elementwise', 'broadcast_shape')}({a.var}.shape, {b.var}.shape, {a.rank}, {b.rank}, err)", True)
        expr = f"({a.var} {_SYMBOL[node.op]} {b.var})"
        if node.out_dtypes[0] != "bool":
            expr += f".astype(np.{node.out_dtypes[0]})"  # NumPy may widen small ints
        em.line(f"{out} = {expr}")
        return [out]


def _bytes(text):
    import numpy as np
    return np.frombuffer(text, dtype=np.uint8) if text else np.zeros(0, np.uint8)

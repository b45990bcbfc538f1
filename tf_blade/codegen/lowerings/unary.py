"""Elementwise unary ops whose NumPy forms are bit-exact with TF's CPU kernels (IEEE-exact float
ops, wrapping integer ops). Transcendental ops (Exp, Rsqrt ...) are left to TF: Eigen's
vectorised versions can differ from libm in the last bit (Log1p has its own lowering, log1p.py,
whose kernel follows both of TF's paths)."""
from ..dtypes import FLOAT
from ..registry import Lowering, lowering
from ._common import numeric_only

_EXPR = {"Neg": "(-{x})", "Abs": "np.abs({x})", "Square": "({x} * {x})", "Sqrt": "np.sqrt({x})",
         "Floor": "np.floor({x})", "Ceil": "np.ceil({x})", "LogicalNot": "(~{x})"}
_FLOAT_ONLY = ("Sqrt", "Floor", "Ceil")


@lowering(*_EXPR)
class UnaryLowering(Lowering):
    elementwise = True

    def check(self, node, graph):
        if node.op in _FLOAT_ONLY and graph.dtype_of(node.inputs[0]) not in FLOAT:
            return "integer input (TF has no such kernel)"
        return numeric_only(node, graph)

    def const_is_value(self, raw, index, value):
        return True  # (Keras Normalization's Sqrt of its variance)

    def emit(self, node, ins, em):
        out = em.tmp()
        expr = _EXPR[node.op].format(x=ins[0].var)
        if node.out_dtypes[0] != "bool":
            expr += f".astype(np.{node.out_dtypes[0]})"  # NumPy may widen small ints
        em.line(f"{out} = {expr}")
        return [out]

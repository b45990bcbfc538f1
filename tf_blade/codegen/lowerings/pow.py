"""Pow of a float by the constant 2: x * x, as TF's runtime computes it. Grappler's arithmetic
optimizer (on in stock TF, not among passes/simplify.py's rewrites) turns Pow(x, c), c a constant
of equal elements 2, into Square(x): in a tf.function Pow(x, 2) is x * x on every value, while
Pow's own kernel (eager) differs from it in ~20% of values. A weighted embedding's sqrtn combiner
squares its weights this way. Other exponents stay TF's: Pow's kernel is not correctly rounded."""
from ..dtypes import FLOAT
from ..registry import Lowering, lowering
from ._common import const_input, const_value


@lowering("Pow")
class PowLowering(Lowering):
    elementwise = True

    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) not in FLOAT:
            return "integer or complex input"
        rank = graph.rank_of(node.inputs[0])
        if const_input(graph, node, 1) or rank is None:
            return "exponent not a constant, or base of unknown rank"
        exponent = const_value(graph, node.inputs[1])
        if exponent.size != 1 or exponent.ndim > rank or exponent.ravel()[0] != 2:
            return "exponent other than one 2 that broadcasts nothing (Pow's own rounding)"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        out = em.tmp()
        em.line(f"{out} = {x.var} * {x.var}")
        return [out]

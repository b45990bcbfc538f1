"""Broadcasting binary ops: comparisons (numeric, and string against a constant), arithmetic,
min/max, logic, FloorMod and DivNoNan (0 where the divisor is 0). Float Maximum/Minimum are
rewritten with TF's bits (kernels/minmax.py: subnormals read as zeros, and which zero a tie of
0.0 and -0.0 returns depends on the element's place) where each operand has the output's size or
one element and TF on this machine is the kernel the probe recognises; a true broadcast keeps
NumPy's answer, which differs from TF's only there. A float Add of a zero constant is its other
operand, as Grappler's constant folding makes it in TF's runtime (-0.0 + 0.0 stays -0.0). RealDiv
by a constant needs nothing here: TF's constant folding turns x / c into x * (1 / c), and the
simplify pass runs it before us, with TF's own rule for which c count as constants (captured
tensors do not: TF's runtime passes them as arguments)."""
import functools

import numpy as np

from ..dtypes import FLOAT, MAIN_NUMERIC, STRING
from ..registry import Lowering, lowering
from ._common import const_value, unsupported_dtype
from .select import select_broadcast

_EXPR = {
    "Equal": "({a} == {b})", "NotEqual": "({a} != {b})", "Greater": "({a} > {b})",
    "GreaterEqual": "({a} >= {b})", "Less": "({a} < {b})", "LessEqual": "({a} <= {b})",
    "Add": "({a} + {b})", "AddV2": "({a} + {b})", "Sub": "({a} - {b})", "Mul": "({a} * {b})",
    "RealDiv": "({a} / {b})", "Maximum": "np.maximum({a}, {b})", "Minimum": "np.minimum({a}, {b})",
    "LogicalAnd": "({a} & {b})", "LogicalOr": "({a} | {b})",
    "DivNoNan": "({a} / {b})",  # then 0 where b is 0: emit()
    # Integer floor modulo (NumPy's % on ints). A divisor of -1 is replaced by 1 (the same 0):
    # INT_MIN % -1 traps in hardware; 0 divisors were refused by check_divisors before. Selected
    # by arithmetic (wrapping, times 0 or 1), not np.where: Numba compiles its broadcasting
    # where in every process, 1.0-1.3 s a signature.
    "FloorMod": "({a} % ({b} + (({b} == 0) | ({b} == -1)) * (1 - {b})))",
}

# On Python scalars Numba raises ZeroDivisionError where arrays give inf, NaN or TF's answer.
_DIVIDING = ("RealDiv", "DivNoNan", "FloorMod")


@functools.lru_cache(maxsize=None)
def min_max_lanes(dtype: str) -> int:
    """The packet width with which kernels/minmax.py gives TF's Maximum and Minimum bits on this
    machine (8 float32 or 4 float64 lanes for the x86 AVX wheel), or 0 when none does: probe
    values (ties of signed zeros, subnormals, NaNs) over 37 elements and against one, once per
    process and dtype."""
    import tensorflow as tf

    info = np.finfo(dtype)
    values = np.array([0.0, -0.0, info.smallest_subnormal, -info.tiny / 2, info.tiny, 1.0, -1.0, np.nan], dtype)
    rng = np.random.default_rng(0)
    a, b = values[rng.integers(0, values.size, 37)], values[rng.integers(0, values.size, 37)]
    cases = [(take_max, x, y, op(tf.constant(x), tf.constant(y.reshape(()) if y.size == 1 else y)).numpy())
             for op, take_max in ((tf.maximum, True), (tf.minimum, False)) for x, y in ((a, b), (a, b[1:2]))]
    for lanes in (8, 4, 16, 2):
        if all(_kernel_answer(x, y, lanes, take_max).tobytes() == want.tobytes() for take_max, x, y, want in cases):
            return lanes
    return 0


def _kernel_answer(x, y, lanes, take_max):
    from ...kernels.minmax import min_max_as_tf
    out = np.ascontiguousarray(np.maximum(x, y) if take_max else np.minimum(x, y))
    tiny = np.array([np.finfo(x.dtype).tiny], x.dtype)
    tiny.setflags(write=False)  # the generated code's constant is read-only: the same compile
    min_max_as_tf(out, x, y, tiny, np.int64(lanes), take_max)
    return out


@lowering(*_EXPR)
class BinaryLowering(Lowering):
    elementwise = True

    def check(self, node, graph):
        if any(graph.rank_of(r) is None for r in node.inputs):
            return "input rank unknown"
        if any(graph.dtype_of(r) == STRING for r in node.inputs):
            if node.op not in ("Equal", "NotEqual"):
                return "string arithmetic"
            if not any(graph.producer(r).op == "Const" and const_value(graph, r).size == 1 for r in node.inputs):
                return "strings compare only against a one-element constant"
        if node.op in ("RealDiv", "DivNoNan") and graph.dtype_of(node.inputs[0]) not in FLOAT:
            return "integer division (TF's division-by-zero rules differ from NumPy's)"
        if node.op == "FloorMod" and graph.dtype_of(node.inputs[0]) not in MAIN_NUMERIC:
            return "only int32/int64/float32/float64"
        return unsupported_dtype(node)

    def const_is_value(self, raw, index, value):
        # x + 0.0 keeps x's bits as Grappler's folding does (_plus_zero_kept): that needs the value
        return not (raw["op"] in ("Add", "AddV2") and value.size == 1 and value.ravel()[0] == 0)

    def emit(self, node, ins, em):
        a, b = ins
        out = em.tmp()
        if a.is_string:
            if b.const is None:  # Grappler's CSE puts the constant operand of x == c first
                a, b = b, a
            (text,) = b.const.ravel()  # check() guarantees a one-element constant
            eq = f"{em.kernel('elementwise', 'string_equals_const')}({a.var}, {a.off}, {a.dat}, {em.const(_bytes(text))})"
            em.line(f"{out} = {eq}" if node.op == "Equal" else f"{out} = ~{eq}")
            return [out]
        kept = _plus_zero_kept(node, a, b)
        if kept is not None:
            em.line(f"{out} = {kept.var}.copy()")
            return [out]
        if a.rank == 0 and b.rank == 0 and node.op not in _DIVIDING:
            # Two scalars (shape-(1,) arrays): nothing to broadcast, one element. Shape glue is
            # mostly these, and the array expression costs each one a loop nest to compile.
            em.line(f"{out} = np.empty(1, np.{node.out_dtypes[0]})")
            em.line(f"{out}[0] = " + _EXPR[node.op].format(a=f"{a.var}[0]", b=f"{b.var}[0]"))
            _as_tf(node, a, b, out, em)
            return [out]
        operands = {"a": a.var, "b": b.var}
        if (a.rank == 0) != (b.rank == 0) and node.op not in _DIVIDING:
            # A scalar and an array (wide & deep's max(x, 0.0)): a scalar broadcasts to any shape,
            # so no check, and an array-scalar expression compiles without NumPy's broadcasting
            # (with wide & deep's log1p normalizers: a new model's compile 14.9 -> 13.2 s)
            operands = {"a": a.var + "[0]" * (a.rank == 0), "b": b.var + "[0]" * (b.rank == 0)}
        else:
            em.call(1, f"{em.kernel('elementwise', 'broadcast_shape')}({a.var}.shape, {b.var}.shape, {em.int64(a.rank)}, {em.int64(b.rank)}, err)", True)
        float_mod = node.op == "FloorMod" and node.out_dtypes[0].startswith("float")
        if node.op == "FloorMod" and not float_mod:
            em.call(0, f"{em.kernel('elementwise', 'check_divisors')}({a.var}.size, {b.var}, err)", True)
        expr = _EXPR[node.op].format(**operands)
        if float_mod:
            # TF: fmod, moved to the divisor's sign unless it is 0. NumPy's % would also give
            # that zero the divisor's sign; TF keeps fmod's (the dividend's). Three arrays of the
            # output's shape: the library's select, not np.where (see select_broadcast).
            rem = em.tmp()
            em.line(f"{rem} = np.fmod({a.var}, {b.var})")
            expr = (f"{em.kernel('elementwise', 'select_same_shape')}(({rem} != 0) & (({b.var} < 0) != ({rem} < 0)), "
                    f"{rem} + {b.var}, {rem})")
        if node.op == "DivNoNan":  # 0 where the divisor is 0, whatever the dividend (NaN too)
            quotient = em.tmp()
            em.line(f"{quotient} = {expr}")  # float / float of one type: already the output's dtype
            select_broadcast(em, out, f"{b.var} == 0", f"np.zeros(1, {quotient}.dtype)", quotient, node.out_ranks[0])
            return [out]
        if node.out_dtypes[0] != "bool":
            expr += f".astype(np.{node.out_dtypes[0]})"  # NumPy may widen small ints
        em.line(f"{out} = {expr}")
        _as_tf(node, a, b, out, em)
        return [out]


def _plus_zero_kept(node, a, b):
    """The operand of a float Add that TF's runtime keeps as the sum: Grappler's constant folding
    rewrites x + 0 (either side, a constant of zeros that cannot change x's shape) as x, so
    -0.0 + 0.0 stays -0.0 in stock TF where IEEE gives 0.0. None when that does not apply."""
    if node.op not in ("Add", "AddV2") or node.out_dtypes[0] not in ("float32", "float64"):
        return None
    for zero, x in ((a, b), (b, a)):
        if zero.const is not None and zero.rank <= x.rank and zero.const.size == 1 and zero.const.ravel()[0] == 0 \
                and x.dtype == node.out_dtypes[0]:
            return x
    return None


def _as_tf(node, a, b, out, em):
    """A float Maximum/Minimum's ``out`` (C-contiguous, fresh) rewritten with TF's bits."""
    dtype = node.out_dtypes[0]
    if node.op not in ("Maximum", "Minimum") or dtype not in ("float32", "float64") or not min_max_lanes(dtype):
        return
    tiny = em.const(np.array([np.finfo(dtype).tiny], dtype))
    flat = [f"np.ascontiguousarray({v}).ravel()" for v in (a.var, b.var)]
    em.line(f"{em.kernel('minmax', 'min_max_as_tf')}({out}.ravel(), {flat[0]}, {flat[1]}, {tiny}, "
            f"{em.int64(min_max_lanes(dtype))}, np.bool_({node.op == 'Maximum'}))")  # not a literal: one compile


def _bytes(text):
    return np.frombuffer(text, dtype=np.uint8) if text else np.zeros(0, np.uint8)

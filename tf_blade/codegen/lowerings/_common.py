"""Checks several lowerings share."""
from ..dtypes import STRING, supported


def unsupported_dtype(node) -> str | None:
    for d in node.out_dtypes:
        if not supported(d):
            return f"output dtype {d} has no kernel"
    return None


# Grappler's unary elementwise ops (IsUnaryElementWise). Its arithmetic optimizer (on in stock TF,
# not among passes/simplify.py's rewrites) hoists chains of them across a Concat or Split: TF runs
# Exp(concat(a, b)) for concat(Exp(a), Exp(b)). Where Eigen's vector path and its scalar tail
# differ (transcendental ops, log1p.py), the bits depend on the tensor the op runs on.
GRAPPLER_UNARY = frozenset({
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "ComplexAbs", "Conj", "Cos",
    "Cosh", "Digamma", "Elu", "Erf", "Erfc", "Exp", "Expm1", "Floor", "Inv", "Invert", "Isinf",
    "Isnan", "Isfinite", "Lgamma", "Log", "Log1p", "LogicalNot", "Neg", "Reciprocal", "Relu",
    "Relu6", "Rint", "Round", "Selu", "Rsqrt", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
    "Softsign", "Sqrt", "Square", "Tan", "Tanh"})
# ... of which these give the same bits wherever an element sits (IEEE-exact, unary.py's)
POSITION_FREE_UNARY = frozenset({"Abs", "Ceil", "Floor", "LogicalNot", "Neg", "Sqrt", "Square"})


def unary_chain(graph, ref):
    """(the ops of the unary elementwise chain ending at ``ref``, nearest first; the node that
    feeds the chain)."""
    chain = []
    node = graph.producer(ref)
    while node.op in GRAPPLER_UNARY and node.inputs:
        chain.append(node.op)
        node = graph.producer(node.inputs[0])
    return chain, node


def grappler_hoists_into(concat, graph) -> bool:
    """Whether TF's Grappler may hoist a position-dependent unary op across ``concat`` (a
    ConcatV2): every value input ends a unary chain and one chain holds such an op (a superset of
    what it rewrites). Such a Concat stays TF's, so TF's runtime makes the same rewrite there."""
    chains = [unary_chain(graph, ref)[0] for ref in concat.inputs[:-1]]
    return len(chains) > 1 and all(chains) and any(set(c) - POSITION_FREE_UNARY for c in chains)


def numeric_only(node, graph) -> str | None:
    for ref in node.inputs:
        if graph.dtype_of(ref) == STRING:
            return "string inputs are not supported here"
    return unsupported_dtype(node)


def const_input(graph, node, position) -> str | None:
    if graph.producer(node.inputs[position]).op != "Const":
        return f"input {position} must be a constant"
    return None


def const_value(graph, ref):
    """The array of the Const node producing ``ref`` (check const_input first)."""
    from .const import const_array
    return const_array(graph.producer(ref).attrs["value"])


def transposed_copy(em, var: str, perm) -> str:
    """Expression: a C-ordered copy of ``var`` with its axes in the order ``perm`` (ints), through
    kernels/shape_ops.transposed (a view by a literal permutation; Numba's run-time-checked
    transpose compiles its error's formatting in every process)."""
    axes = ", ".join(str(int(p)) for p in perm)
    return f"np.ascontiguousarray({em.kernel('shape_ops', 'transposed')}({var}, ({axes},)))"


def part_tables_call(em, n_out: int, kernel: str, groups, rest: str):
    """The ``n_out`` outputs of ``kernel`` (a kernel expression) called with the part table
    (kernels/concat.part_table) of each group of array expressions, then ``rest`` and err, then
    the error check. A table holds addresses only: the groups' tuples are kept alive past the call."""
    held = em.tmp()
    em.line(f"{held} = ({''.join('(' + ''.join(a + ', ' for a in g) + '), ' for g in groups)})")
    tables = "".join(f"{em.kernel('concat', 'part_table')}({held}[{i}]), " for i in range(len(groups)))
    outs = em.call(n_out, f"{kernel}({tables}{rest}, err)", False)
    em.line(f"{em.kernel('concat', 'keep_alive')}({held})")
    em.check()
    return outs

"""Checks several lowerings share."""
from ..dtypes import STRING, supported


def unsupported_dtype(node) -> str | None:
    for d in node.out_dtypes:
        if not supported(d):
            return f"output dtype {d} has no kernel"
    return None


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

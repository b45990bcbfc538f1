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

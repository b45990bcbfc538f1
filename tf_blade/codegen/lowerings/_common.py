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

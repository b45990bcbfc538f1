"""The one supported-op predicate: op type (has a lowering) + dtypes + device + the lowering's check."""
from __future__ import annotations

from typing import Optional

from ..codegen.dtypes import RESOURCE, STRING, supported
from ..codegen.registry import load_all


UNFROZEN_LOOKUPS = ("LookupTableFindV2", "LookupTableSizeV2")
UNFROZEN_TABLE = ("a table tf_blade does not freeze: mutable, with string values or per-key defaults, or one "
                  "it cannot tell is static (a ConcreteFunction brings no owner: give its tf.function, "
                  "tf.Module or SavedModel)")


def unsupported_reason(node, graph, options) -> Optional[str]:
    """None when ``node`` may join a fused cluster, else why not (shown in the report)."""
    lowerings = load_all()
    if node.op == "Const":
        return "constants are copied into clusters, never clustered"
    if node.op in UNFROZEN_LOOKUPS:  # those left after freeze_tables
        return UNFROZEN_TABLE
    if node.op not in lowerings:
        return "no lowering"
    if options.allow_ops is not None and node.op not in options.allow_ops:
        return "not in allow_ops"
    if node.op in options.deny_ops:
        return "in deny_ops"
    if node.op == "Identity" and any(graph.nodes[c].op == "NoOp" for c in node.control_inputs):
        # A function output ordered after its stateful reads: clustered, it would tie the
        # clusters before and after that NoOp into a cycle, and forwarding costs nothing in TF.
        return "output Identity ordered after a NoOp"
    if node.device and "CPU" not in node.device.upper():
        return f"placed on {node.device}"
    for ref in node.inputs:
        dtype = graph.dtype_of(ref)
        if not supported(dtype) and not (dtype == RESOURCE and node.op == "ResourceGather"):
            return f"input dtype {dtype}"
        if dtype != RESOURCE and graph.rank_of(ref) is None:
            return "input rank unknown"  # a fused op's inputs need a static rank
    for dtype, rank in zip(node.out_dtypes, node.out_ranks):
        if not supported(dtype) and dtype != STRING:
            return f"output dtype {dtype}"
        if rank is None:
            return "output rank unknown"
    return lowerings[node.op].check(node, graph)

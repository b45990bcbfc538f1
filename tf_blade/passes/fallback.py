"""A cluster's original TF ops as a library function, kept with the optimized model.

BladeFusedCall runs it in place of the kernel when the kernel fails to compile in the serving
process, or breaks the op's contract on a run (runtime/blade_op.cc), so a request is answered
by the ops it replaced instead of failing.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from ..codegen.registry import EFFECT_OPS
from ..graph.ir import Graph, Node, parse_ref

PREFIX = "blade_fallback_"


def is_fallback(function_name: str) -> bool:
    return function_name.startswith(PREFIX)


def frozen_table_handles(cluster: List[str], frozen: Dict[str, Node]) -> List[str]:
    """The table handles the original lookups of ``cluster``'s frozen ones read (one ref per
    table): the fused op takes them as extra inputs for its fallback alone."""
    handles = []
    for m in cluster:
        if m in frozen and frozen[m].inputs[0] not in handles:
            handles.append(frozen[m].inputs[0])
    return handles


def add_fallback_function(graph: Graph, cluster: List[str], input_refs, input_dtypes, output_refs,
                          key: str, frozen: Optional[Dict[str, Node]] = None) -> Optional[str]:
    """Adds ``blade_fallback_<key>`` to ``graph.library`` and returns that name: inputs ``input_refs`` (typed as the fused op takes
    them), the cluster's nodes and the constants they read, outputs ``output_refs``. A frozen
    lookup (``frozen``: node name -> the LookupTableFindV2 it replaced) is put back as it was;
    its table handle must be among ``input_refs``."""
    frozen = frozen or {}
    if graph.library is None:
        return None
    name = PREFIX + key
    if any(f.signature.name == name for f in graph.library.function):
        return name
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2
    from tensorflow.python.framework.graph_to_function_def import graph_to_function_def

    sub = graph_pb2.GraphDef()
    if graph.versions is not None:
        sub.versions.CopyFrom(graph.versions)
    args = {}
    for i, (ref, dtype) in enumerate(zip(input_refs, input_dtypes)):
        nd = sub.node.add(name=f"arg_{i}", op="Placeholder")
        nd.attr["dtype"].type = dtype
        args[ref] = nd.name
    members = set(cluster)
    original = {m: frozen.get(m, graph.nodes[m]) for m in cluster}
    consts = []   # small constants the spec copied in; large ones are inputs already
    for m in cluster:
        for ref in original[m].inputs:
            producer = parse_ref(ref)[0]
            if ref not in args and producer not in members and producer not in consts:
                consts.append(producer)
    for n in consts + list(cluster):
        node = original.get(n) or graph.nodes[n]
        nd = sub.node.add(name=n, op=node.op, device=node.device)
        nd.input.extend([args.get(r, r) for r in node.inputs]
                        + ["^" + c for c in node.control_inputs if c in members])
        for key, value in node.raw_attrs.items():
            if key != "_class":  # colocation with nodes outside the cluster
                nd.attr[key].CopyFrom(value)
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(sub, name="")
    tensor = lambda ref: g.get_tensor_by_name("%s:%d" % parse_ref(ref))  # noqa: E731
    fdef = graph_to_function_def(
        g, [op for op in g.get_operations() if op.name not in args.values()],
        [tensor(a) for a in args.values()], [tensor(r) for r in output_refs])
    fdef.signature.name = name
    for n in cluster:  # an Assert has no output to fetch: a control output keeps it running
        if graph.nodes[n].op in EFFECT_OPS:
            fdef.signature.control_output.append(n)
            fdef.control_ret[n] = n
    graph.library.function.add().CopyFrom(fdef)
    return name

"""A cluster's original TF ops as a library function, kept with the optimized model.

BladeFusedCall runs it in place of the kernel when the kernel fails to compile in the serving
process, or breaks the op's contract on a run (runtime/blade_op.cc), so a request is answered
by the ops it replaced instead of failing.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from tensorflow.python.framework import op_def_registry

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
    from tensorflow.core.framework import function_pb2

    fdef = function_pb2.FunctionDef()
    args = {}
    for i, (ref, dtype) in enumerate(zip(input_refs, input_dtypes)):
        fdef.signature.input_arg.add(name=f"arg_{i}", type=dtype)
        args[ref] = f"arg_{i}"
    members = set(cluster)
    original = {m: frozen.get(m, graph.nodes[m]) for m in cluster}
    consts = []   # small constants the spec copied in; large ones are inputs already
    for m in cluster:
        for ref in original[m].inputs:
            producer = parse_ref(ref)[0]
            if ref not in args and producer not in members and producer not in consts:
                consts.append(producer)
    body = {n: original.get(n) or graph.nodes[n] for n in consts + list(cluster)}
    # Written directly, not imported into a tf.Graph and converted: that took 0.1 s of a warm
    # optimize for a 1,000-op cluster.
    for n, node in body.items():
        op_def = _op_def(node)
        nd = fdef.node_def.add(name=n, op=node.op, device=node.device)
        nd.input.extend([args[r] if r in args else _body_ref(r, body) for r in node.inputs]
                        + ["^" + c for c in node.control_inputs if c in members])
        for key, value in node.raw_attrs.items():
            if key != "_class":  # colocation with nodes outside the cluster
                nd.attr[key].CopyFrom(value)
        for attr in op_def.attr:  # the defaults, as the tf.Graph import this replaces added them
            if attr.HasField("default_value") and attr.name not in nd.attr:
                nd.attr[attr.name].CopyFrom(attr.default_value)
        fdef.signature.is_stateful |= op_def.is_stateful
    for k, ref in enumerate(output_refs):
        fdef.signature.output_arg.add(name=f"out_{k}", type=graph.dtype_of(ref))
        fdef.ret[f"out_{k}"] = args[ref] if ref in args else _body_ref(ref, body)
    fdef.signature.name = name
    for n in cluster:  # an Assert has no output to fetch: a control output keeps it running
        if graph.nodes[n].op in EFFECT_OPS:
            fdef.signature.control_output.append(n)
            fdef.control_ret[n] = n
    graph.library.function.add().CopyFrom(fdef)
    return name


def _op_def(node: Node):
    op_def = op_def_registry.get(node.op)
    if op_def is None:
        raise ValueError(f"tf_blade: {node.name} runs {node.op}, which is not a registered TF op")
    return op_def


def _body_ref(ref: str, body: Dict[str, Node]) -> str:
    """``ref`` ('node:k') as a function body names it: 'node:<output arg>:<index in that arg>'."""
    name, k = parse_ref(ref)
    node = body[name]
    for arg in _op_def(node).output_arg:
        if arg.number_attr:
            count = node.raw_attrs[arg.number_attr].i
        elif arg.type_list_attr:
            count = len(node.raw_attrs[arg.type_list_attr].list.type)
        else:
            count = 1
        if k < count:
            return f"{name}:{arg.name}:{k}"
        k -= count
    raise ValueError(f"{node.op} {name} has no output {parse_ref(ref)[1]}")

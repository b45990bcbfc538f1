"""Inlines (Stateful)PartitionedCall nodes so clustering sees the ops that do the work.

A loaded SavedModel signature is a thin graph whose body sits in the function library behind a
StatefulPartitionedCall; tf.functions calling tf.functions nest the same way.
"""
from __future__ import annotations

from typing import Dict

from .ir import Graph, Node, from_graphdef, make_ref, parse_ref, to_graphdef

CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")


def inline_calls(graph_def, max_rounds: int = 16):
    """Returns a GraphDef with every call of a library function replaced by its body."""
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

    functions = {f.signature.name: f for f in graph_def.library.function}
    for _ in range(max_rounds):
        calls = [n for n in graph_def.node
                 if n.op in CALL_OPS and n.attr["f"].func.name in functions]
        if not calls:
            return graph_def
        graph = from_graphdef(graph_def, typed=False)  # the pipeline types the result
        for call in calls:
            fdef = functions[call.attr["f"].func.name]
            body_def, flat_names = function_def_to_graph_def(fdef)
            for nd in body_def.node:  # colocation hints name nodes the renaming invalidates
                nd.attr.pop("_class", None)
            _inline_one(graph, graph.nodes[call.name], fdef, from_graphdef(body_def, typed=False), flat_names)
        graph_def = to_graphdef(graph)
    raise ValueError(f"function calls nested deeper than {max_rounds} levels")


def _inline_one(graph: Graph, call: Node, fdef, body: Graph, flat_names: Dict[str, str]):
    prefix = call.name + "/"
    args = [a.name for a in fdef.signature.input_arg]
    arg_map = {arg: call.inputs[i] for i, arg in enumerate(args)}

    def rename(ref: str) -> str:
        name, idx = parse_ref(ref)
        if name in arg_map:
            return arg_map[name]
        return make_ref(prefix + name, idx)

    del graph.nodes[call.name]
    body_users = body.consumers()
    sinks = []
    for node in body.nodes.values():
        if node.name in arg_map:
            continue
        node.name = prefix + node.name
        node.inputs = [rename(r) for r in node.inputs]
        node.control_inputs = [prefix + c for c in node.control_inputs if c not in arg_map]
        if not node.inputs and not node.control_inputs:
            node.control_inputs = list(call.control_inputs)  # keep the call's ordering
        if node.device == "" and call.device:
            node.device = call.device
        graph.nodes[node.name] = node
    for name, users in body_users.items():
        if name not in arg_map and not users:
            sinks.append(prefix + name)

    # The call's outputs become the body's returned tensors.
    outputs = []
    for out_arg in fdef.signature.output_arg:
        inner = flat_names.get(fdef.ret[out_arg.name], fdef.ret[out_arg.name])
        outputs.append(rename(inner))
    for node in graph.nodes.values():
        new_inputs = []
        for ref in node.inputs:
            name, idx = parse_ref(ref)
            new_inputs.append(outputs[idx] if name == call.name else ref)
        node.inputs = new_inputs
    # Control dependencies on the call now wait for the whole body (its sinks cover everything).
    graph.nodes[call.name] = Node(name=call.name, op="NoOp", inputs=[], control_inputs=sinks,
                                  attrs={}, raw_attrs={}, device=call.device)

"""Replaces each cluster with one fused node and records its spec (what codegen compiles).

A spec is JSON: the cluster's inputs (dtype, rank), its nodes in topological order with plain
attrs and output (dtype, rank), and its output references. Small constants feeding the cluster
are copied in, so codegen sees them as compile-time values.
"""
from __future__ import annotations

import json
from typing import Dict, List

from ..codegen.dtypes import RESOURCE
from ..graph.ir import Graph, Node, make_ref, parse_ref, runs_unread
from .fallback import add_fallback_function, frozen_table_handles

MAX_INLINED_CONST_ELEMENTS = 1024  # larger constants (frozen tables) stay graph inputs


def build_spec(graph: Graph, cluster: List[str], fetches=()):
    """Returns (spec dict, input refs in the outer graph, output refs in the outer graph, the
    cluster's live nodes, which the spec holds)."""
    cluster = live_nodes(graph, cluster, fetches)
    members = set(cluster)
    users = graph.consumers()
    local: Dict[str, str] = {}      # outer ref -> spec ref
    inputs, input_refs, nodes = [], [], []

    def spec_ref(ref, consumer):
        if ref in local:
            return local[ref]
        producer = graph.producer(ref)
        if producer.op == "Const" and _const_size(producer) <= MAX_INLINED_CONST_ELEMENTS:
            local[ref] = f"{len(nodes)}:0"
            nodes.append(_spec_node(producer, []))
            return local[ref]
        dtype, rank = graph.dtype_of(ref), graph.rank_of(ref)
        if dtype == RESOURCE:  # ResourceGather's table: the fused op takes the read value
            dtype = consumer.attrs["dtype"]
            rank = consumer.out_ranks[0] - graph.rank_of(consumer.inputs[1]) + 1
        local[ref] = f"in:{len(inputs)}"
        inputs.append({"dtype": dtype, "rank": rank, "read_variable": graph.dtype_of(ref) == RESOURCE})
        shape = graph.variable_shape(ref) if inputs[-1]["read_variable"] else None
        if shape is not None:  # a variable's shape is fixed: rewrites may rely on it (a table's rows)
            inputs[-1]["shape"] = shape
        input_refs.append(ref)
        return local[ref]

    for name in cluster:
        node = graph.nodes[name]
        refs = [spec_ref(r, node) for r in node.inputs]
        k = len(nodes)
        nodes.append(_spec_node(node, refs))
        after = [c for c in node.control_inputs if c in members]
        if after:  # run after these (an Assert guarding this node): TF's order of errors
            nodes[k]["after"] = after
        for j in range(len(node.out_dtypes)):
            local[make_ref(name, j)] = f"{k}:{j}"

    output_refs = []
    fetched = set(fetches)
    for name in cluster:
        outside = [u for u in users[name] if u not in members]
        for j in range(len(graph.nodes[name].out_dtypes)):
            ref = make_ref(name, j)
            if ref in fetched or any(ref in graph.nodes[u].inputs for u in outside):
                output_refs.append(ref)
    spec = {"inputs": inputs, "nodes": nodes, "outputs": [local[r] for r in output_refs]}
    return spec, input_refs, output_refs, cluster


def live_nodes(graph: Graph, cluster: List[str], fetches=()) -> List[str]:
    """The cluster's nodes TF runs, in order: a function prunes what feeds none of its outputs (nor
    any control edge) unless it is stateful. Dead ones stay out of the spec and the fallback: they
    would cost time and could raise errors TF never raises."""
    members, users, fetched = set(cluster), graph.consumers(), set(fetches)

    def kept(node):
        return runs_unread(node.op) or any(u not in members for u in users[node.name]) \
            or any(make_ref(node.name, j) in fetched for j in range(len(node.out_dtypes)))

    stack = [name for name in cluster if kept(graph.nodes[name])]
    live = set()
    while stack:
        name = stack.pop()
        if name in live:
            continue
        live.add(name)
        node = graph.nodes[name]
        stack += [p for p in (parse_ref(r)[0] for r in node.inputs) if p in members]
        stack += [c for c in node.control_inputs if c in members]
    return [name for name in cluster if name in live]


def _spec_node(node: Node, refs):
    return {"name": node.name, "op": node.op, "inputs": refs, "attrs": node.attrs,
            "outputs": [[d, r] for d, r in zip(node.out_dtypes, node.out_ranks)]}


def _const_size(node: Node) -> int:
    size = 1
    for d in node.attrs["value"]["shape"]:
        size *= d
    return size


def fused_input_dtypes(spec):
    """The fused op's input dtypes: an embedding table enters as its resource handle."""
    return [RESOURCE if inp["read_variable"] else inp["dtype"] for inp in spec["inputs"]]


def spec_text(spec) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def replace_cluster(graph: Graph, cluster: List[str], fused_name: str, make_fused_node, fetches=(), frozen=None):
    """Swaps ``cluster`` for the node ``make_fused_node(name, spec, input_refs, output_refs)``
    returns, rewiring data and control edges; returns that node and {old ref: new ref}.
    ``frozen``: the original lookups of frozen tables (passes/freeze_tables.py), for the fallback."""
    members = set(cluster)
    spec, input_refs, output_refs, live = build_spec(graph, cluster, fetches)
    if not getattr(make_fused_node, "takes_resources", False):  # the numpy bridge needs values
        for i, inp in enumerate(spec["inputs"]):
            if inp["read_variable"]:
                input_refs[i] = _read_variable(graph, input_refs[i], inp["dtype"], fused_name, i)
    extra = {}
    if getattr(make_fused_node, "takes_fallback", False):
        from ..runtime.compiler import spec_key
        handles = frozen_table_handles(live, frozen or {})
        extra["fallback"] = add_fallback_function(graph, live, input_refs + handles,
                                                  fused_input_dtypes(spec) + [RESOURCE] * len(handles),
                                                  output_refs, spec_key(spec_text(spec)), frozen)
        extra["fallback_inputs"] = handles
    fused = make_fused_node(fused_name, spec, input_refs, output_refs, **extra)
    fused.control_inputs = sorted({c for m in cluster for c in graph.nodes[m].control_inputs
                                   if c not in members})
    new_ref = {ref: make_ref(fused_name, k) for k, ref in enumerate(output_refs)}
    for name in cluster:
        del graph.nodes[name]
    for node in graph.nodes.values():
        node.inputs = [new_ref.get(r, r) for r in node.inputs]
        if any(c in members for c in node.control_inputs):
            kept = [c for c in node.control_inputs if c not in members]
            node.control_inputs = kept + [fused_name]
        _drop_colocation(node, members)
    graph.nodes[fused_name] = fused
    return fused, new_ref


def _drop_colocation(node: Node, gone):
    """Drops the colocation hints (``_class: loc:@name``) that name nodes now fused away: the
    graph would not import (an outside control_dependency Identity colocated with a fused Select)."""
    hint = node.raw_attrs.get("_class")
    if hint is None:
        return
    kept = [c for c in hint.list.s if c.decode(errors="replace")[len("loc:@"):] not in gone]
    if len(kept) == len(hint.list.s):
        return
    from tensorflow.core.framework import attr_value_pb2
    node.raw_attrs.pop("_class")  # a new value: the old one may be shared with the fallback's copy
    if kept:
        node.raw_attrs["_class"] = attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(s=kept))


def _read_variable(graph: Graph, resource_ref: str, dtype: int, fused_name: str, i: int) -> str:
    """ReadVariableOp aliases the variable's buffer (no copy): the table enters the op as a tensor."""
    from tensorflow.core.framework import attr_value_pb2

    name = graph.unique_name(f"{fused_name}/read_{i}")
    graph.nodes[name] = Node(name=name, op="ReadVariableOp", inputs=[resource_ref], control_inputs=[],
                             attrs={"dtype": dtype}, raw_attrs={"dtype": attr_value_pb2.AttrValue(type=dtype)},
                             out_dtypes=[dtype], out_ranks=[None])
    return name


def prune_dead_constants(graph: Graph, keep):
    users = graph.consumers()
    for name in [n for n, node in graph.nodes.items()
                 if node.op == "Const" and not users[n] and n not in keep]:
        del graph.nodes[name]

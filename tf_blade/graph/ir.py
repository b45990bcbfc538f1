"""A small graph model the passes work on: nodes, tensor references, dtypes and static ranks.

GraphDef protobufs appear only at the edges (``from_graphdef`` / ``to_graphdef``); the passes
see plain Python objects.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

from .attrs import attr_to_py


def parse_ref(ref: str):
    """'node:1' -> ('node', 1); 'node' -> ('node', 0); '^node' -> ('node', -1) for control edges."""
    if ref.startswith("^"):
        return ref[1:], -1
    name, _, idx = ref.partition(":")
    return name, int(idx) if idx else 0


def make_ref(name: str, index: int) -> str:
    return name if index == 0 else f"{name}:{index}"


@dataclasses.dataclass
class Node:
    name: str
    op: str
    inputs: List[str]                 # data inputs, normalised to 'name' / 'name:i'
    control_inputs: List[str]         # producer names
    attrs: Dict[str, object]          # name -> plain Python value (see attrs.py)
    raw_attrs: Dict[str, object]      # name -> tf AttrValue proto, written back unchanged
    device: str = ""
    out_dtypes: List[int] = dataclasses.field(default_factory=list)   # tf DataType enums
    out_ranks: List[Optional[int]] = dataclasses.field(default_factory=list)


class Graph:
    def __init__(self, nodes: List[Node], library=None, versions=None, variable_shapes=None):
        self.nodes: Dict[str, Node] = {n.name: n for n in nodes}
        self.library = library
        self.versions = versions
        # captured variables' static shapes by placeholder name (``from_graphdef``)
        self.variable_shapes: Dict[str, list] = {name: list(shape) for name, (_, shape) in (variable_shapes or {}).items()}

    def variable_shape(self, ref: str) -> Optional[list]:
        """The static shape (None for an unknown dim) of the variable whose handle ``ref`` is,
        through Identities; None when it is not a captured variable's."""
        node = self.producer(ref)
        while node.op == "Identity" and node.inputs:
            node = self.producer(node.inputs[0])
        return self.variable_shapes.get(node.name)

    def producer(self, ref: str) -> Node:
        return self.nodes[parse_ref(ref)[0]]

    def dtype_of(self, ref: str) -> int:
        name, idx = parse_ref(ref)
        return self.nodes[name].out_dtypes[idx]

    def rank_of(self, ref: str) -> Optional[int]:
        name, idx = parse_ref(ref)
        return self.nodes[name].out_ranks[idx]

    def consumers(self) -> Dict[str, List[str]]:
        """producer name -> names of nodes that read it (data or control)."""
        out: Dict[str, List[str]] = {name: [] for name in self.nodes}
        for node in self.nodes.values():
            for ref in node.inputs:
                out[parse_ref(ref)[0]].append(node.name)
            for name in node.control_inputs:
                out[name].append(node.name)
        return out

    def topological_order(self) -> List[str]:
        indegree = {name: 0 for name in self.nodes}
        users = self.consumers()
        for node in self.nodes.values():
            indegree[node.name] = len(node.inputs) + len(node.control_inputs)
        ready = [name for name, d in indegree.items() if d == 0]
        order = []
        while ready:
            name = ready.pop()
            order.append(name)
            for user in users[name]:
                indegree[user] -= 1
                if indegree[user] == 0:
                    ready.append(user)
        if len(order) != len(self.nodes):
            raise ValueError("graph has a cycle")
        return order

    def unique_name(self, base: str) -> str:
        name, k = base, 0
        while name in self.nodes:
            k += 1
            name = f"{base}_{k}"
        return name

    def add_const(self, base: str, array) -> str:
        """Adds a Const node holding ``array`` under a fresh name from ``base``; returns the name."""
        name = self.unique_name(base)
        self.nodes[name] = const_node(name, array)
        return name


def runs_unread(op: str) -> bool:
    """TF runs a node of ``op`` even when nothing reads it: a stateful op, or one TF's registry
    does not know (tf_blade's own rewrites), which is kept to be safe."""
    from tensorflow.python.framework import op_def_registry
    op_def = op_def_registry.get(op)
    return op_def is None or op_def.is_stateful


def const_node(name: str, array) -> Node:
    """A Const node holding the NumPy ``array`` (strings as bytes objects)."""
    from tensorflow.core.framework import attr_value_pb2
    from tensorflow.python.framework import tensor_util
    from .attrs import tensor_to_py
    proto = tensor_util.make_tensor_proto(array)
    enum = proto.dtype
    return Node(name=name, op="Const", inputs=[], control_inputs=[],
                attrs={"value": tensor_to_py(proto), "dtype": enum},
                raw_attrs={"value": attr_value_pb2.AttrValue(tensor=proto), "dtype": attr_value_pb2.AttrValue(type=enum)},
                out_dtypes=[enum], out_ranks=[len(proto.tensor_shape.dim)])


# Output ranks that TF's shape function leaves unknown although the kernel always gives them
# (RaggedBincount's is [rows, size]); a fused op needs static ranks.
KERNEL_RANKS = {"RaggedBincount": (2,)}


def from_graphdef(graph_def, variable_shapes=None, tables=(), typed=True) -> Graph:
    """Builds the model; dtypes and ranks come from TensorFlow's own shape inference. With
    ``typed=False`` the nodes have neither (no TF import: a tenth of a second for a 1,000-node
    graph), for passes that only move nodes, as inlining does.

    ``variable_shapes`` maps resource placeholders (captured variables) to (dtype, shape): a
    GraphDef drops a handle's shape, so for the analysis they are imported as VarHandleOps.
    ``tables``: captured table placeholders, imported as table ops for the same reason (a
    lookup's output rank is then its keys' rank).
    """
    if not typed:
        return Graph([_node(nd) for nd in graph_def.node], library=graph_def.library, versions=graph_def.versions)
    import tensorflow as tf

    analysed = graph_def
    if variable_shapes or tables:
        analysed = type(graph_def)()
        analysed.CopyFrom(graph_def)
        by_name = {nd.name: nd for nd in analysed.node}

        def source(ref):  # inlined calls reach a captured handle through Identity nodes
            nd = by_name.get(parse_ref(ref)[0])
            while nd is not None and nd.op == "Identity":
                nd = by_name.get(parse_ref(nd.input[0])[0])
            return nd.name if nd is not None else None
        lookups = {source(nd.input[0]): nd for nd in analysed.node if nd.op == "LookupTableFindV2"}
        for nd in analysed.node:
            if nd.op == "Placeholder" and nd.name in tables and nd.name in lookups:
                find = lookups[nd.name]
                nd.op = "MutableHashTableV2"  # its shape function, unlike HashTableV2's, types the handle
                nd.attr.clear()
                nd.attr["key_dtype"].type = find.attr["Tin"].type
                nd.attr["value_dtype"].type = find.attr["Tout"].type
                nd.attr["shared_name"].s = nd.name.encode()
            if nd.op == "Placeholder" and nd.name in (variable_shapes or {}):
                dtype, shape = variable_shapes[nd.name]
                nd.op = "VarHandleOp"
                nd.attr.clear()
                nd.attr["dtype"].type = dtype
                nd.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
                nd.attr["shared_name"].s = nd.name.encode()
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(analysed, name="")
    nodes = []
    for nd in graph_def.node:
        outputs = tf_graph.get_operation_by_name(nd.name).outputs
        ranks = [t.shape.rank for t in outputs]
        if nd.op in KERNEL_RANKS:
            ranks = [KERNEL_RANKS[nd.op][j] if r is None else r for j, r in enumerate(ranks)]
        nodes.append(_node(nd, [t.dtype.as_datatype_enum for t in outputs], ranks))
    return Graph(nodes, library=graph_def.library, versions=graph_def.versions, variable_shapes=variable_shapes)


def _node(nd, out_dtypes=(), out_ranks=()) -> Node:
    data, control = [], []
    for ref in nd.input:
        name, idx = parse_ref(ref)
        if idx < 0:
            control.append(name)
        else:
            data.append(make_ref(name, idx))
    return Node(name=nd.name, op=nd.op, inputs=data, control_inputs=control,
                attrs={k: attr_to_py(v) for k, v in nd.attr.items() if not k.startswith("_")},
                raw_attrs=dict(nd.attr.items()), device=nd.device,
                out_dtypes=list(out_dtypes), out_ranks=list(out_ranks))


def to_graphdef(graph: Graph):
    from tensorflow.core.framework import graph_pb2

    gd = graph_pb2.GraphDef()
    if graph.versions is not None:
        gd.versions.CopyFrom(graph.versions)
    if graph.library is not None:
        gd.library.CopyFrom(graph.library)
        _prune_library(gd, [v for node in graph.nodes.values() for v in node.raw_attrs.values()],
                       [node.op for node in graph.nodes.values()])
    for name in graph.topological_order():
        node = graph.nodes[name]
        nd = gd.node.add()
        nd.name, nd.op, nd.device = node.name, node.op, node.device
        nd.input.extend(node.inputs + ["^" + c for c in node.control_inputs])
        for key, value in node.raw_attrs.items():
            nd.attr[key].CopyFrom(value)
    return gd


def _prune_library(gd, attrs, ops):
    """Drops library functions no node calls any more (the bodies inlined and fused away)."""
    by_name = {f.signature.name: f for f in gd.library.function}
    keep, stack = set(), [a.func.name for a in attrs if a.WhichOneof("value") == "func"]
    stack += [op for op in ops if op in by_name]
    stack += [f.name for a in attrs if a.WhichOneof("value") == "list" for f in a.list.func]
    while stack:
        name = stack.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        for nd in by_name[name].node_def:
            stack += [v.func.name for v in nd.attr.values() if v.WhichOneof("value") == "func"]
            stack += [nd.op] if nd.op in by_name else []
    kept = [f for f in gd.library.function if f.signature.name in keep]
    del gd.library.function[:]
    gd.library.function.extend(kept)
    kept_grads = [g for g in gd.library.gradient if g.function_name in keep]
    del gd.library.gradient[:]
    gd.library.gradient.extend(kept_grads)

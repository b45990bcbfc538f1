"""Common subexpression elimination: identical stateless nodes with identical inputs become one.

Feature-column code builds the same work more than once: a wide & deep model's linear part and
its DNN read the same categorical column, and each builds its own StringToHashBucketFast,
SparseReshape, Where ... over the same input. Grappler merges them when TF runs the graph
(ArithmeticOptimizer's dedup), but the graphs handed to tf_blade are not optimized yet, so a
fused kernel would do each piece twice. Two nodes merge when they have the same op, device,
attributes (internal ``_`` attributes aside), data inputs in order and control inputs as a set,
and the op is stateless. Nodes without inputs other than Const (placeholders, variables,
resources) and control-flow ops never merge; nor does a node the caller fetches by name.
"""
from __future__ import annotations

from typing import Iterable

from ..graph.ir import Graph, make_ref, parse_ref

# Stateless by their op definitions, but their identity is their frame or their position.
_NEVER = frozenset({"Placeholder", "PlaceholderWithDefault", "Enter", "Exit", "NextIteration",
                    "Merge", "Switch", "LoopCond", "ControlTrigger", "NoOp"})


def _stateless(op: str) -> bool:
    from tensorflow.python.framework import op_def_registry
    op_def = op_def_registry.get(op)
    return op_def is not None and not op_def.is_stateful


def _key(node, canonical_inputs):
    attrs = tuple(sorted((k, v.SerializeToString(deterministic=True))
                         for k, v in node.raw_attrs.items() if not k.startswith("_")))
    return (node.op, node.device, attrs, tuple(canonical_inputs),
            frozenset(node.control_inputs))


def dedup(graph: Graph, keep: Iterable[str] = ()) -> int:
    """Merges duplicates in place; ``keep``: node names that must survive (the fetched ones).
    Returns how many nodes were removed."""
    keep = set(keep)
    replaced = {}            # removed node name -> the node that stands for it
    seen = {}
    stateless = {}
    for name in graph.topological_order():
        node = graph.nodes[name]
        node.inputs = [_renamed(ref, replaced) for ref in node.inputs]
        node.control_inputs = list(dict.fromkeys(replaced.get(c, c) for c in node.control_inputs))
        if node.op in _NEVER or (not node.inputs and node.op != "Const"):
            continue
        if node.op not in stateless:
            stateless[node.op] = _stateless(node.op)
        if not stateless[node.op]:
            continue
        key = _key(node, node.inputs)
        first = seen.setdefault(key, name)
        if first != name and name not in keep:
            replaced[name] = first
    for name in replaced:
        del graph.nodes[name]
    return len(replaced)


def _renamed(ref: str, replaced) -> str:
    name, index = parse_ref(ref)
    return make_ref(replaced[name], index) if name in replaced else ref

"""Control edges that would split clusters for nothing: moved to where they still order.

``with tf.control_dependencies([check]):`` gives every op built inside it, constants included, a
control edge from ``check``. A constant is never clustered (clusters copy it in), so such an edge
leaves a TF node between the check's cluster and the cluster reading the constant, and the two
cannot merge (Keras CategoryEncoding's range assert, every FeatureSpace with categorical
features). A constant does nothing: ordering its consumers after ``check`` keeps every ordering
that mattered.

A NoOp with at most one control input only relays it (the ragged ops' statically resolved
``assert_integer`` checks, between an assert and the ``control_dependency`` Identity it guards).
A NoOp is never clustered either, so each relay split a ragged ``tf.where`` into more clusters;
its consumers now wait on its input directly (or on nothing). NoOps that gather several edges (a function's
outputs ordered after its stateful ops) stay: support.py keeps their Identity consumers in TF.
"""
from __future__ import annotations

from ..graph.ir import Graph


def move_constant_control_edges(graph: Graph) -> int:
    """Returns how many constants lost their control inputs."""
    users = graph.consumers()
    moved = 0
    for node in graph.nodes.values():
        if node.op != "Const" or not node.control_inputs:
            continue
        for user in users[node.name]:
            consumer = graph.nodes[user]
            consumer.control_inputs += [c for c in node.control_inputs if c not in consumer.control_inputs]
        node.control_inputs = []
        moved += 1
    return moved


def bypass_relay_noops(graph: Graph) -> int:
    """Consumers of a NoOp with at most one control input wait on that input instead. Returns how many
    NoOps were bypassed (they stay in the graph, fed as before, ordering nothing)."""
    users = graph.consumers()
    bypassed = 0
    for name in graph.topological_order():  # a relay of a relay passes the first input along
        node = graph.nodes[name]
        if node.op != "NoOp" or len(node.control_inputs) > 1 or node.inputs:  # (no outputs to fetch)
            continue
        for user in users[name]:
            consumer = graph.nodes[user]
            consumer.control_inputs = [c for c in consumer.control_inputs if c != name]
            consumer.control_inputs += [c for c in node.control_inputs if c not in consumer.control_inputs]
        bypassed += bool(users[name])
    return bypassed

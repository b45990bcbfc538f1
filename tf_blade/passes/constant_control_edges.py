"""Moves control edges off constants onto the constants' consumers.

``with tf.control_dependencies([check]):`` gives every op built inside it, constants included, a
control edge from ``check``. A constant is never clustered (clusters copy it in), so such an edge
leaves a TF node between the check's cluster and the cluster reading the constant, and the two
cannot merge (Keras CategoryEncoding's range assert, every FeatureSpace with categorical
features). A constant does nothing: ordering its consumers after ``check`` keeps every ordering
that mattered.
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

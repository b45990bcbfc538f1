"""Integer Range nodes over constants become constants.

TF's asserts reduce over ``range(rank)`` built as Range(Const, Const, Const) (assert_less_equal,
assert_non_negative ...). Grappler would fold it; the graphs passed here are not optimized yet,
and the reductions lower only over constant axes (lowerings/reduce.py), so every such assert
stayed in TF and split the clusters around it (seven in a Keras ``Hashing(mask_value=...)`` on a
ragged input). Ranges that TF would reject, or that are large, stay as they are.
"""
from __future__ import annotations

import numpy as np

from ..codegen.dtypes import INT32_64, numpy_name
from ..codegen.lowerings._common import const_value
from ..graph.ir import Graph, const_node

MAX_ELEMENTS = 1024


def fold_ranges(graph: Graph) -> int:
    """Returns how many Range nodes became Const nodes (their control inputs kept)."""
    folded = 0
    for name, node in list(graph.nodes.items()):
        if node.op != "Range" or node.out_dtypes[0] not in INT32_64:
            continue
        if any(graph.producer(r).op != "Const" for r in node.inputs):
            continue
        start, limit, delta = (const_value(graph, r) for r in node.inputs)
        if start.ndim or limit.ndim or delta.ndim:
            continue
        start, limit, delta = int(start), int(limit), int(delta)
        if delta == 0 or (delta > 0 and start > limit) or (delta < 0 and start < limit):
            continue  # TF raises at run time; so it still will
        if -(-abs(limit - start) // abs(delta)) > MAX_ELEMENTS:
            continue
        const = const_node(name, np.arange(start, limit, delta, dtype=numpy_name(node.out_dtypes[0])))
        const.control_inputs, const.device = node.control_inputs, node.device
        graph.nodes[name] = const
        folded += 1
    return folded

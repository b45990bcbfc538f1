"""Counting each segment's values without summing ones.

A ragged ``reduce_mean`` divides the row sums by the row counts, and TF counts by summing ones:

    counts = UnsortedSegmentSum(OnesLike(values), segment_ids, num_segments)

(Grappler writes the OnesLike as Fill(Shape(values), 1)), which fills and then adds up a tensor
of ones as large as the values ([tokens, dim] for a tags field's embeddings). ``_BladeSegmentCount(values, segment_ids, num_segments)`` (kernels/
segment_sum.py ``unsorted_segment_count``) reads only the values' shape: it adds 1 per id once, in
the ones' dtype (so a float count rounds as TF's sum of ones does), with UnsortedSegmentSum's
checks, and copies each count across its row.
"""
from __future__ import annotations

from typing import Tuple

from .spec import const_values, producer, replace_matches, through_identity

FUSED_OP = "_BladeSegmentCount"


def _shaped_like(spec, ref):
    """x where ``ref`` is ones shaped like x: OnesLike(x), or Fill(Shape(x), 1) as Grappler
    rewrites it; else None."""
    node, _ = producer(spec, through_identity(spec, ref))
    if node is not None and node["op"] == "OnesLike":
        return node["inputs"][0]
    if node is not None and node["op"] == "Fill" and const_values(spec, node["inputs"][1]) == [1]:
        shape, _ = producer(spec, node["inputs"][0])
        if shape is not None and shape["op"] == "Shape":
            return shape["inputs"][0]
    return None


def _match(spec, node):
    if node["op"] != "UnsortedSegmentSum":
        return None
    like = _shaped_like(spec, node["inputs"][0])
    return None if like is None else ([like] + node["inputs"][1:], node["attrs"])


def count_segments_of_ones(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

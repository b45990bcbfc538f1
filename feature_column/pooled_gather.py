"""Vertical fusion of a pooled embedding lookup: Sum/Mean(Gather(table, ids), axis=1).

Keras pools an ``Embedding`` over a row's ids this way (and feature code written by hand does
too). With ids of rank 2 and a table of rank 2,

    g = ResourceGather(table, ids)   or GatherV2(table, ids, axis=0)   (optionally behind Identity)
    out = Mean(g, axis=[1])          or Sum(g, axis=[1]), keep_dims false

becomes ``_BladePooledGather(table, ids)`` (kernels/pooled_gather.py): no [rows, k, width]
intermediate, no transpose, the same bits.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta

from .spec import const_values, producer, replace_matches, through_identity

FUSED_OP = "_BladePooledGather"
_MEAN = {"Sum": 0, "Mean": 1}


def _match(spec, node):
    if node["op"] not in _MEAN or node["attrs"].get("keep_dims", False):
        return None
    if const_values(spec, node["inputs"][1]) not in ([1], [-2]):
        return None
    gather, _ = producer(spec, through_identity(spec, node["inputs"][0]))
    if gather is None or gather["op"] not in ("ResourceGather", "GatherV2") or gather["attrs"].get("batch_dims", 0):
        return None
    if gather["op"] == "GatherV2" and const_values(spec, gather["inputs"][2]) not in ([0], 0):
        return None
    table, ids = gather["inputs"][:2]
    if ref_meta(spec, ids)[1] != 2 or gather["outputs"][0][1] != 3 or node["outputs"][0][0] not in (1, 2):  # float32, float64
        return None
    return [table, ids], {"mean": _MEAN[node["op"]], "strict": int(gather["op"] == "ResourceGather")}


def fuse_pooled_gathers(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

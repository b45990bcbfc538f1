"""Vertical fusion of embedding_lookup_sparse's tail into one embedding-bag node.

Every embedding column ends in the same chain (TF 2.x feature_column_v2 / DenseFeatures /
input_layer):

    f = SparseFillEmptyRows(indices, ids, dense_shape, default)
    u = Unique(f:1)
    g = ResourceGather(table, u:0)                  (optionally behind Identity)
    r = SparseSegment{Sum,Mean,SqrtN}(g, u:1, StridedSlice(f:0)[:, 0])
    out = Select(Tile(Reshape(f:2, [-1, 1]), ...), ZerosLike(r), r)

``out`` becomes ``_BladeEmbeddingBag(indices, ids, dense_shape, table)`` (kernels/embedding_bag.py)
with the same result bit for bit; the chain's nodes become dead unless something else reads them
and are dropped by ``prune_dead_nodes``.
"""
from __future__ import annotations

from typing import List, Tuple

from .spec import const_values as _const_values, producer as _producer, replace_matches
from .spec import through_identity as _through_identity

FUSED_OP = "_BladeEmbeddingBag"
_MODES = {"SparseSegmentSum": 0, "SparseSegmentMean": 1, "SparseSegmentSqrtN": 2}


def _match(spec, select) -> Tuple[List[str], dict] | None:
    """(inputs of the fused node, its attrs: the combiner mode) when ``select`` ends an embedding chain."""
    if select["op"] not in ("Select", "SelectV2") or len(select["inputs"]) != 3:
        return None
    cond, zeros, reduced = select["inputs"]
    r_node, _ = _producer(spec, reduced)
    z_node, _ = _producer(spec, zeros)
    if r_node is None or r_node["op"] not in _MODES or z_node is None or z_node["op"] != "ZerosLike" \
            or z_node["inputs"][0] != reduced:
        return None
    data, seg_idx, seg_ids = r_node["inputs"]
    gather, _ = _producer(spec, _through_identity(spec, data))
    unique, j = _producer(spec, seg_idx)
    if gather is None or gather["op"] not in ("ResourceGather", "GatherV2") or unique is None \
            or unique["op"] != "Unique" or j != 1 or gather["inputs"][1] != seg_idx[:-1] + "0":
        return None
    if gather["op"] == "GatherV2" and _const_values(spec, gather["inputs"][2]) != [0]:
        return None
    if gather["op"] == "ResourceGather" and gather["attrs"].get("batch_dims", 0) != 0:
        return None
    fill, j = _producer(spec, unique["inputs"][0])
    if fill is None or fill["op"] != "SparseFillEmptyRows" or j != 1:
        return None
    fill_ref = unique["inputs"][0][:-2]
    # segment ids must be column 0 of the filled indices
    rows, _ = _producer(spec, seg_ids)
    if rows is None or rows["op"] != "StridedSlice" or rows["inputs"][0] != fill_ref + ":0" \
            or _const_values(spec, rows["inputs"][1]) != [0, 0] or _const_values(spec, rows["inputs"][2]) != [0, 1] \
            or _const_values(spec, rows["inputs"][3]) != [1, 1] or rows["attrs"].get("shrink_axis_mask") != 2:
        return None
    # the condition must be the filled rows' empty-row indicator, tiled across the embedding
    tile, _ = _producer(spec, cond)
    reshape, _ = _producer(spec, tile["inputs"][0]) if tile is not None and tile["op"] == "Tile" else (None, None)
    if reshape is None or reshape["op"] != "Reshape" or reshape["inputs"][0] != fill_ref + ":2":
        return None
    if _const_values(spec, reshape["inputs"][1]) != [-1, 1]:
        return None
    indices, ids, dense_shape, _default = fill["inputs"]
    return [indices, ids, dense_shape, gather["inputs"][0]], {"mode": _MODES[r_node["op"]]}


def fuse_embedding_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

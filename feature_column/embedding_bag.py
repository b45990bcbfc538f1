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


def zeroed_empty_rows(spec, select):
    """(the reduced value, the SparseFillEmptyRows node, its ref without the output) when
    ``select`` is Select(Tile(Reshape(fill:2, [-1, 1]), ...), ZerosLike(r), r): the rows the fill
    made zero; else None."""
    if select["op"] not in ("Select", "SelectV2") or len(select["inputs"]) != 3:
        return None
    cond, zeros, reduced = select["inputs"]
    z_node, _ = _producer(spec, zeros)
    if z_node is None or z_node["op"] != "ZerosLike" or z_node["inputs"][0] != reduced:
        return None
    tile, _ = _producer(spec, cond)
    reshape, _ = _producer(spec, tile["inputs"][0]) if tile is not None and tile["op"] == "Tile" else (None, None)
    if reshape is None or reshape["op"] != "Reshape" or _const_values(spec, reshape["inputs"][1]) != [-1, 1]:
        return None
    fill, j = _producer(spec, reshape["inputs"][0])
    if fill is None or fill["op"] != "SparseFillEmptyRows" or j != 2:
        return None
    return reduced, fill, reshape["inputs"][0][:-2]


def is_first_column(spec, ref, fill_ref) -> bool:
    """Whether ``ref`` is column 0 of the filled indices (``fill_ref``:0), StridedSlice(f:0)[:, 0],
    or that Cast to int32 (SegmentSum's segment ids)."""
    rows, _ = _producer(spec, ref)
    if rows is not None and rows["op"] == "Cast" and rows["attrs"].get("DstT") == 3:
        rows, _ = _producer(spec, rows["inputs"][0])
    return rows is not None and rows["op"] == "StridedSlice" and rows["inputs"][0] == fill_ref + ":0" \
        and _const_values(spec, rows["inputs"][1]) == [0, 0] and _const_values(spec, rows["inputs"][2]) == [0, 1] \
        and _const_values(spec, rows["inputs"][3]) == [1, 1] and rows["attrs"].get("shrink_axis_mask") == 2


def table_gather(spec, data, seg_idx):
    """(the table, the Unique node) when ``data`` is (Resource)Gather(table, u:0) behind Identity and
    ``seg_idx`` is u:1; else None."""
    gather, _ = _producer(spec, _through_identity(spec, data))
    unique, j = _producer(spec, seg_idx)
    if gather is None or gather["op"] not in ("ResourceGather", "GatherV2") or unique is None \
            or unique["op"] != "Unique" or j != 1 or gather["inputs"][1] != seg_idx[:-1] + "0":
        return None
    if gather["op"] == "GatherV2" and _const_values(spec, gather["inputs"][2]) != [0]:
        return None
    if gather["op"] == "ResourceGather" and gather["attrs"].get("batch_dims", 0) != 0:
        return None
    return gather["inputs"][0], unique


def _match(spec, select) -> Tuple[List[str], dict] | None:
    """(inputs of the fused node, its attrs: the combiner mode) when ``select`` ends an embedding chain."""
    found = zeroed_empty_rows(spec, select)
    r_node, _ = _producer(spec, found[0]) if found is not None else (None, None)
    if r_node is None or r_node["op"] not in _MODES:
        return None
    _, fill, fill_ref = found
    data, seg_idx, seg_ids = r_node["inputs"]
    gathered = table_gather(spec, data, seg_idx)
    if gathered is None or gathered[1]["inputs"][0] != fill_ref + ":1" or not is_first_column(spec, seg_ids, fill_ref):
        return None
    indices, ids, dense_shape, _default = fill["inputs"]
    return [indices, ids, dense_shape, gathered[0]], {"mode": _MODES[r_node["op"]]}


def fuse_embedding_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

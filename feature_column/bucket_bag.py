"""Vertical fusion of a bucketized column's embedding into one pass.

After ``fuse_embedding_bags`` an embedding of ``bucketized_column(numeric_column(shape=(d,)))``
over a [n, d] input x reads (feature_column_v2's BucketizedColumn, Grappler having folded
range(d) into a constant; ``n`` is StridedSlice(Shape(b or x))[0]):

    b = Bucketize(x)
    offsets = Tile(Const [0 .. d-1], ExpandDims(n, 0))
    ids = AddV2(Reshape(b, [-1]), Mul(offsets, Const len(boundaries) + 1))          (either order)
    rows = Reshape(Tile(ExpandDims(Range(0, n, 1), 1), Const [1, d]), [-1])        (no Tile when d is 1)
    r = SparseReshape(Cast(Transpose(Pack(rows, offsets), [1, 0]), int64), Cast(Pack(n, d), int64), new_shape)
    out = _BladeEmbeddingBag(r:0, ids, r:1, table)            (both through the id filter, optional)

``out`` becomes ``_BladeBucketBag(x, new_shape, table)`` (kernels/bucket_bag.py), with the
boundaries and d as attrs: no ids, coordinates, filter or reshape materialised, the same bits.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta
from .embedding_bag import FUSED_OP as BAG_OP
from .hashed_id_filter import before_id_filter
from .spec import const_values, producer, producer_op, prune_dead_nodes, replace_matches, through_identity

FUSED_OP = "_BladeBucketBag"
_INT64 = 9
_INT32_IDS = 1 << 31  # the ids are int32: the largest, (len(boundaries) + 1) * d - 1, must fit


def _either_order(node):
    a, b = node["inputs"][:2]
    return [(a, b), (b, a)]


def _is_batch(spec, ref, tensors) -> bool:
    """Whether ``ref`` is StridedSlice(Shape(t), [0], [1], [1]) taking dim 0 of one of ``tensors``."""
    node = producer_op(spec, ref, "StridedSlice")
    if node is None or node["attrs"].get("shrink_axis_mask") != 1 or any(
            node["attrs"].get(mask, 0) for mask in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask")):
        return False
    if [const_values(spec, r) for r in node["inputs"][1:]] != [[0], [1], [1]]:
        return False
    shape = producer_op(spec, node["inputs"][0], "Shape")
    return shape is not None and through_identity(spec, shape["inputs"][0]) in tensors


def _column_offsets(spec, ref, is_n):
    """d when ``ref`` is Tile(Const [0 .. d-1], ExpandDims(n, 0)), else None."""
    tile = producer_op(spec, ref, "Tile")
    if tile is None:
        return None
    values = const_values(spec, tile["inputs"][0])
    expand = producer_op(spec, tile["inputs"][1], "ExpandDims")
    if not values or values != list(range(len(values))) or expand is None \
            or const_values(spec, expand["inputs"][1]) not in ([0], [-1]) or not is_n(expand["inputs"][0]):
        return None
    return len(values)


def _bucket_ids(spec, ids):
    """(Bucketize node, (x, b), offsets ref, d) when ``ids`` is the column's ids, else None."""
    add = producer_op(spec, ids, "AddV2", "Add")
    for flat, scaled in _either_order(add) if add is not None else []:
        reshape, mul = producer_op(spec, flat, "Reshape"), producer_op(spec, scaled, "Mul")
        bucketize = producer_op(spec, reshape["inputs"][0], "Bucketize") if reshape is not None else None
        if bucketize is None or mul is None or const_values(spec, reshape["inputs"][1]) != [-1]:
            continue
        x = through_identity(spec, bucketize["inputs"][0])
        tensors = (x, through_identity(spec, reshape["inputs"][0]))
        for offsets, stride in _either_order(mul):
            d = _column_offsets(spec, offsets, lambda ref: _is_batch(spec, ref, tensors))
            if d is not None and const_values(spec, stride) == [len(bucketize["attrs"]["boundaries"]) + 1]:
                return bucketize, tensors, through_identity(spec, offsets), d
    return None


def _is_row_of_each_id(spec, ref, offsets, d, is_n) -> bool:
    """Whether ``ref`` is Cast(Transpose(Pack(rows, offsets), [1, 0]), int64): (r, j) for each id."""
    cast = producer_op(spec, ref, "Cast")
    transpose = producer_op(spec, cast["inputs"][0], "Transpose") if cast is not None else None
    pack = producer_op(spec, transpose["inputs"][0], "Pack") if transpose is not None else None
    if pack is None or cast["attrs"].get("DstT") != _INT64 or const_values(spec, transpose["inputs"][1]) != [1, 0] \
            or pack["attrs"].get("axis", 0) != 0 or len(pack["inputs"]) != 2 \
            or through_identity(spec, pack["inputs"][1]) != offsets:
        return False
    flat = producer_op(spec, pack["inputs"][0], "Reshape")
    tile = producer_op(spec, flat["inputs"][0], "Tile") if flat is not None else None
    if tile is not None and const_values(spec, tile["inputs"][1]) != [1, d]:
        return False
    tiled = tile["inputs"][0] if tile is not None else flat["inputs"][0] if flat is not None and d == 1 else None
    expand = producer_op(spec, tiled, "ExpandDims") if tiled is not None else None  # Grappler drops a Tile by [1, 1]
    rng = producer_op(spec, expand["inputs"][0], "Range") if expand is not None else None
    return (rng is not None and const_values(spec, flat["inputs"][1]) == [-1]
            and const_values(spec, expand["inputs"][1]) == [1]
            and const_values(spec, rng["inputs"][0]) == [0] and const_values(spec, rng["inputs"][2]) == [1]
            and is_n(rng["inputs"][1]))


def _is_dense_shape(spec, ref, d, is_n) -> bool:
    """Whether ``ref`` is Cast(Pack(n, d), int64)."""
    cast = producer_op(spec, ref, "Cast")
    pack = producer_op(spec, cast["inputs"][0], "Pack") if cast is not None else None
    return (pack is not None and cast["attrs"].get("DstT") == _INT64 and pack["attrs"].get("axis", 0) == 0
            and len(pack["inputs"]) == 2 and is_n(pack["inputs"][0]) and const_values(spec, pack["inputs"][1]) == [d])


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    indices, ids, _ = before_id_filter(spec, indices, ids)  # it keeps every id: all are >= 0
    found = _bucket_ids(spec, ids)
    if found is None:
        return None
    bucketize, tensors, offsets, d = found
    boundaries = bucketize["attrs"]["boundaries"]
    x = tensors[0]
    if ref_meta(spec, x)[1] != 2 or (len(boundaries) + 1) * d > _INT32_IDS:
        return None

    def is_n(ref):
        return _is_batch(spec, ref, tensors)
    reshape, j = producer(spec, through_identity(spec, indices))
    shape_node, k = producer(spec, through_identity(spec, dense_shape))
    if reshape is None or reshape["op"] != "SparseReshape" or j != 0 or shape_node is not reshape or k != 1 \
            or not _is_row_of_each_id(spec, reshape["inputs"][0], offsets, d, is_n) \
            or not _is_dense_shape(spec, reshape["inputs"][1], d, is_n):
        return None
    return [x, reshape["inputs"][2], table], {"boundaries": boundaries, "columns": d, "mode": bag["attrs"]["mode"]}


def _shapes_past_bucketize(spec) -> dict:
    """Shape(Bucketize(x)) read as Shape(x) (an elementwise op keeps its input's shape): the bags
    leave the column's batch size as the only reader of its Bucketize, which then need not run."""
    bucketized = {f"{k}:0": node for k, node in enumerate(spec["nodes"]) if node["op"] == "Bucketize"}
    nodes = []
    for node in spec["nodes"]:
        source = bucketized.get(node["inputs"][0]) if node["op"] == "Shape" else None
        nodes.append(node if source is None else dict(  # Bucketize's T is its input's dtype
            node, inputs=source["inputs"][:1], attrs=dict(node["attrs"], T=source["attrs"]["T"])))
    return prune_dead_nodes(dict(spec, nodes=nodes))


def fuse_bucket_bags(spec) -> Tuple[dict, int]:
    spec, fused = replace_matches(spec, _match, FUSED_OP)
    return (_shapes_past_bucketize(spec) if fused else spec), fused

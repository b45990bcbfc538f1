"""Vertical fusion of a hash-bucket embedding column over dense strings into one pass.

After ``fuse_embedding_bags`` and ``drop_hashed_id_filters`` such a column reads (feature_column_v2's
``_to_sparse_input_and_drop_ignore_values`` with ignore value "", then the hash and the bag):

    w = Where(NotEqual(S, ""))
    ids = StringToHashBucketFast(GatherNd(S, w))                   (optionally behind Identity)
    r = SparseReshape(w, Shape(S, out_type=int64), new_shape)      (optional)
    out = _BladeEmbeddingBag(r:0 or w, ids, r:1 or Shape(S), table)

``out`` becomes ``_BladeStringBag(S, new_shape, table)`` (kernels/string_bag.py): one pass over S
that hashes each non-empty string and adds its table row, with the same bits and the same errors.
The bag's rows must be S's leading rows, so ``new_shape`` has to be 2 long: a Pack of two values,
or the Shape of a rank-2 S.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta

from .embedding_bag import FUSED_OP as BAG_OP
from .spec import const_values, producer, producer_op, replace_matches, through_identity

FUSED_OP = "_BladeStringBag"
_INT64 = 9


def _is_shape_of(spec, ref, strings) -> bool:
    node = producer_op(spec, ref, "Shape")
    return node is not None and node["inputs"][0] == strings and node["attrs"].get("out_type") == _INT64


def kept_coordinates(spec, ref):
    """(S, v) when ``ref`` is Where(NotEqual(S, v)), v a one-element constant (either operand
    order), else (None, None)."""
    where = producer_op(spec, ref, "Where")
    compare = producer_op(spec, where["inputs"][0], "NotEqual") if where is not None else None
    for tensor, ignored in (compare["inputs"], compare["inputs"][::-1]) if compare is not None else ():
        values = const_values(spec, ignored)
        if values is not None and len(values) == 1 and ref_meta(spec, tensor)[1] >= 1:
            return tensor, ignored
    return None, None


def dense_bag(spec, indices, dense_shape, keys):
    """(S, new_shape, v) when a bag's ``indices`` and ``dense_shape`` place the values ``keys`` =
    GatherNd(S, Where(NotEqual(S, v))) as row r of the bag holding the values other than v (a
    constant's ref) of S's flat range [r * inner, (r + 1) * inner): straight (S of rank 2), or
    through a SparseReshape of those coordinates to a Pack of two values. Else None."""
    gathered = producer_op(spec, keys, "GatherNd")
    if gathered is None:
        return None
    strings, coords = gathered["inputs"]
    kept, ignored = kept_coordinates(spec, coords)
    if kept != strings:
        return None
    reshape, j = producer(spec, through_identity(spec, indices))
    if reshape is not None and reshape["op"] == "SparseReshape":
        shape_node, k = producer(spec, through_identity(spec, dense_shape))
        if j != 0 or shape_node is not reshape or k != 1 or reshape["inputs"][0] != coords \
                or not _is_shape_of(spec, reshape["inputs"][1], strings):
            return None
        new_shape = reshape["inputs"][2]
        packed = producer_op(spec, new_shape, "Pack")
        if packed is None or len(packed["inputs"]) != 2:
            return None
        return strings, new_shape, ignored
    if through_identity(spec, indices) != coords or not _is_shape_of(spec, dense_shape, strings) \
            or ref_meta(spec, strings)[1] != 2:
        return None
    return strings, dense_shape, ignored


def strings_bag(spec, indices, dense_shape, keys):
    """(S, new_shape) of ``dense_bag`` over strings whose ignored value is "" (the kernels skip
    empty strings), else None."""
    found = dense_bag(spec, indices, dense_shape, keys)
    if found is None or const_values(spec, found[2]) not in ([""], [b""]):
        return None
    return found[:2]


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    hashed = producer_op(spec, ids, "StringToHashBucketFast")
    found = strings_bag(spec, indices, dense_shape, hashed["inputs"][0]) if hashed is not None else None
    if found is None:
        return None
    strings, new_shape = found
    return [strings, new_shape, table], {"num_buckets": hashed["attrs"]["num_buckets"],
                                         "mode": bag["attrs"]["mode"]}


def fuse_string_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

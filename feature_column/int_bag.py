"""Vertical fusion of an identity, integer-vocabulary or hashed-integer embedding column over a
dense integer input.

After ``fuse_embedding_bags`` such a column reads (its vocabulary frozen by passes/freeze_tables.py;
``ignore`` is the column's ignore value, -1 by default):

    w = Where(NotEqual(X, ignore))
    ids = GatherNd(X, w)                 (categorical_column_with_identity)
       or _BladeTableFind(GatherNd(X, w), default, index...)       (with_vocabulary_list or _file)
       or _BladeHashInts(GatherNd(X, w))                           (with_hash_bucket: int_hash.py)
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])              (the id filter, optional)
    r = SparseReshape(w, Shape(X, out_type=int64), new_shape)      (optional)
    out = _BladeEmbeddingBag(GatherV2(r:0 or w, keep), GatherV2(ids, keep), r:1 or Shape(X), table)

``out`` becomes ``_BladeIntBag(X, new_shape, table, ignore, default, index...)`` (kernels/int_bag.py;
the other kinds read no vocabulary and get ``ignore`` in its four places), placed as the string
bags are (string_bag.py ``dense_bag``): one pass, the same bits and errors. An identity column
with a default value selects between its ids and the default first: no match.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta
from ..kernels.int_bag import HASH, IDENTITY, VOCABULARY
from ..passes.freeze_tables import TABLE_FIND
from .embedding_bag import FUSED_OP as BAG_OP
from .hashed_id_filter import before_id_filter
from .int_hash import FUSED_OP as HASH_INTS
from .spec import producer, replace_matches, through_identity
from .string_bag import dense_bag

FUSED_OP = "_BladeIntBag"
_INT64 = 9
_INTS = (3, _INT64)  # int32, int64


def _id_source(spec, ids):
    """(kind, the ref it reads the values from, the vocabulary's inputs or None, num_buckets)."""
    node, _ = producer(spec, ids)
    if node is not None and node["op"] == TABLE_FIND and not node["attrs"]["string_keys"] \
            and node["outputs"][0][0] == _INT64:
        return VOCABULARY, node["inputs"][0], node["inputs"][1:], 0
    if node is not None and node["op"] == HASH_INTS:
        return HASH, node["inputs"][0], None, node["attrs"]["num_buckets"]
    return IDENTITY, ids, None, 0


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    indices, ids, filtered = before_id_filter(spec, indices, ids)
    kind, values, vocabulary, num_buckets = _id_source(spec, through_identity(spec, ids))
    found = dense_bag(spec, indices, dense_shape, through_identity(spec, values))
    if found is None or ref_meta(spec, found[0])[0] not in _INTS:
        return None
    x, new_shape, ignore = found
    return [x, new_shape, table, ignore] + (vocabulary or [ignore] * 4), {
        "kind": kind, "num_buckets": num_buckets, "drop_negative": int(filtered), "mode": bag["attrs"]["mode"]}


def fuse_int_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

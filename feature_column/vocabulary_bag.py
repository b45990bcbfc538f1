"""Vertical fusion of a vocabulary embedding column over dense strings into one pass.

After ``fuse_embedding_bags`` and ``fuse_vocabulary_buckets`` a vocabulary-list or -file column
reads (its table frozen by passes/freeze_tables.py):

    w = Where(NotEqual(S, ""))
    ids = _BladeTableFind(GatherNd(S, w), default, index...)   or _BladeTableFindOrBucket(..., size)
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])            (the id filter, optional)
    r = SparseReshape(w, Shape(S, out_type=int64), new_shape)    (optional)
    out = _BladeEmbeddingBag(GatherV2(r:0 or w, keep), GatherV2(ids, keep), r:1 or Shape(S), table)

``out`` becomes ``_BladeVocabularyBag(S, new_shape, table, default, index..., [size])``
(kernels/vocabulary_bag.py): one pass over S that looks each non-empty string up, drops the ids
the filter would and adds the table rows, with the same bits and the same errors. The hashed
column's fusion (string_bag.py) places the strings the same way.
"""
from __future__ import annotations

from typing import Tuple

from ..passes.freeze_tables import TABLE_FIND
from .embedding_bag import FUSED_OP as BAG_OP
from .hashed_id_filter import before_id_filter
from .spec import producer, replace_matches, through_identity
from .string_bag import strings_bag
from .vocabulary_oov import FUSED_OP as FIND_OR_BUCKET, INT64

FUSED_OP = "_BladeVocabularyBag"


def string_lookup(spec, ids):
    """The frozen lookup of strings making ``ids`` (_BladeTableFind over string keys, or
    _BladeTableFindOrBucket; int64 ids), else None."""
    find, _ = producer(spec, through_identity(spec, ids))
    if find is None or find["outputs"][0][0] != INT64 or not (
            find["op"] == FIND_OR_BUCKET or (find["op"] == TABLE_FIND and find["attrs"]["string_keys"])):
        return None
    return find


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    indices, ids, filtered = before_id_filter(spec, indices, ids)
    find = string_lookup(spec, ids)
    if find is None:
        return None
    found = strings_bag(spec, indices, dense_shape, through_identity(spec, find["inputs"][0]))
    if found is None:
        return None
    strings, new_shape = found
    return [strings, new_shape, table] + find["inputs"][1:], {
        "num_buckets": find["attrs"].get("num_buckets", 0), "drop_negative": int(filtered),
        "mode": bag["attrs"]["mode"]}


def fuse_vocabulary_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

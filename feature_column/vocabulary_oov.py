"""Vocabulary lookups with out-of-vocabulary buckets, each string hashed once.

A vocabulary column with ``num_oov_buckets`` (TF's StaticVocabularyTable) looks every string up
and also hashes it into a bucket past the vocabulary, keeping the bucket where the lookup found
nothing (or found the lookup's default):

    ids = _BladeTableFind(s, default, index...)      (a frozen table: passes/freeze_tables.py)
    out = SelectV2(NotEqual(ids, default), ids, AddV2(size, StringToHashBucketFast(s, n)))

(either operand order of NotEqual and AddV2).

Both place a string by its FarmHash Fingerprint64: the frozen index by a slot, the bucket by a
remainder. ``_BladeTableFindOrBucket(s, default, index..., size)`` (kernels/table_lookup.py
``find_string_or_bucket``) computes it once a string.
"""
from __future__ import annotations

from typing import Tuple

from ..passes.freeze_tables import TABLE_FIND
from .spec import const_values, producer, replace_matches, through_identity

FUSED_OP = "_BladeTableFindOrBucket"
INT64 = 9


def _table_find(spec, ref):
    node, _ = producer(spec, through_identity(spec, ref))
    return node if node is not None and node["op"] == TABLE_FIND and node["attrs"]["string_keys"] else None


def _bucket(spec, add, keys):
    """(size ref, num_buckets) when ``add`` is AddV2(size, StringToHashBucketFast(keys, n)), either way round."""
    if add is None or add["op"] not in ("AddV2", "Add") or add["attrs"].get("T") != INT64:
        return None
    for size, hashed in (add["inputs"], add["inputs"][::-1]):
        node, _ = producer(spec, through_identity(spec, hashed))
        values = const_values(spec, size)
        if (node is not None and node["op"] == "StringToHashBucketFast" and values is not None and len(values) == 1
                and through_identity(spec, node["inputs"][0]) == keys):
            return size, node["attrs"]["num_buckets"]
    return None


def _match(spec, node):
    if node["op"] != "SelectV2" or node["attrs"].get("T") != INT64:
        return None
    cond, found, other = node["inputs"]
    find = _table_find(spec, found)
    compare, _ = producer(spec, cond)
    if find is None or compare is None or compare["op"] != "NotEqual":
        return None
    keys, default = through_identity(spec, find["inputs"][0]), find["inputs"][1]
    ids, against = compare["inputs"]
    if _table_find(spec, ids) is not find:
        ids, against = against, ids
    default_value = const_values(spec, default)
    if _table_find(spec, ids) is not find or default_value is None or const_values(spec, against) != default_value:
        return None
    add, _ = producer(spec, through_identity(spec, other))
    bucket = _bucket(spec, add, keys)
    if bucket is None or node["outputs"][0] != find["outputs"][0]:  # same dtype and rank: no broadcast
        return None
    size, num_buckets = bucket
    return [find["inputs"][0], default] + find["inputs"][2:] + [size], {"num_buckets": num_buckets}


def fuse_vocabulary_buckets(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

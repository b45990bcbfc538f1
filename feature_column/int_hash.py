"""Hashing integers without making their strings.

``categorical_column_with_hash_bucket`` over integers (and Keras ``Hashing`` on ints) formats each
id and hashes the text:

    ids' = StringToHashBucketFast(AsString(ids), num_buckets)

becomes ``_BladeHashInts(ids)`` (kernels/farmhash.py ``hash_ints_to_bucket``): each id is formatted
into one reused 20-byte buffer and fingerprinted there; no tstring tensor is built. Only
AsString's default format (TF's ``%d`` / ``%lld``, as std::to_string) qualifies.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.dtypes import INT32_64
from ..kernels.as_string import FLAGS, NO_FLAG
from .spec import producer, replace_matches, through_identity

FUSED_OP = "_BladeHashInts"


def _match(spec, node):
    if node["op"] != "StringToHashBucketFast":
        return None
    text, _ = producer(spec, through_identity(spec, node["inputs"][0]))
    if text is None or text["op"] != "AsString":
        return None
    a = text["attrs"]
    if a.get("T") not in INT32_64 or a.get("width", -1) != -1 or FLAGS.get(a.get("fill", "")) != NO_FLAG:
        return None
    return [text["inputs"][0]], {"num_buckets": node["attrs"]["num_buckets"]}


def fuse_int_hashes(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

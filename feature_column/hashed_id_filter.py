"""Drops the id filter of hashed columns (and finds it for the bags that take it in: vocabulary_bag.py,
bucket_bag.py, int_bag.py).

A categorical column keeps only ids >= 0 (feature_column_v2's ``_prune_invalid_ids``):

    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])
    ids' = GatherV2(ids, keep, 0);   indices' = GatherV2(indices, keep, 0)

When ``ids`` is a StringToHashBucketFast result it lies in [0, num_buckets): every row is kept, so
each gather returns its input. TF still runs the compare, the Where, the reshape and both gathers
per column per call; this rewrite reads the inputs instead and lets the filter die. A gather only
counts as the identity when its input provably has one row per id: the ids themselves, or the
SparseReshape of the very coordinates the hashed strings (or the ints they format) were gathered
with.
"""
from __future__ import annotations

from typing import Tuple

from .spec import const_values, producer, prune_dead_nodes, replace_uses, through_identity


def filtered_ids(spec, keep_ref):
    """The ids ref when ``keep_ref`` is the filter's Reshape(Where(GreaterEqual(ids, 0)), [-1]), else None."""
    reshape, _ = producer(spec, keep_ref)
    if reshape is None or reshape["op"] != "Reshape" or const_values(spec, reshape["inputs"][1]) != [-1]:
        return None
    where, _ = producer(spec, reshape["inputs"][0])
    if where is None or where["op"] != "Where":
        return None
    compare, _ = producer(spec, where["inputs"][0])
    if compare is None or compare["op"] != "GreaterEqual" or const_values(spec, compare["inputs"][1]) != [0]:
        return None
    return through_identity(spec, compare["inputs"][0])


def before_id_filter(spec, indices, ids):
    """(indices, ids, True) before the id filter when the bag reads both through it: GatherV2(x,
    keep, 0) of each with one ``keep`` that filters those ids. Else (indices, ids, False)."""
    nodes = [producer(spec, through_identity(spec, ref))[0] for ref in (indices, ids)]
    if not all(node is not None and node["op"] == "GatherV2" and const_values(spec, node["inputs"][2]) == [0]
               for node in nodes):
        return indices, ids, False
    on_indices, on_ids = nodes
    keep = on_ids["inputs"][1]
    if on_indices["inputs"][1] != keep or filtered_ids(spec, keep) != through_identity(spec, on_ids["inputs"][0]):
        return indices, ids, False
    return on_indices["inputs"][0], on_ids["inputs"][0], True


def _hashed_ids_filter(spec, keep_ref):
    """The (hash ref, its strings' coordinates ref) a ``keep`` vector filters, or None."""
    ids_ref = filtered_ids(spec, keep_ref)
    if ids_ref is None:
        return None
    hashed, _ = producer(spec, ids_ref)
    if hashed is None or hashed["op"] != "StringToHashBucketFast" or hashed["outputs"][0][1] != 1:
        return None
    strings, _ = producer(spec, hashed["inputs"][0])
    if strings is not None and strings["op"] == "AsString":  # int columns: one string per id
        strings, _ = producer(spec, strings["inputs"][0])
    coords = strings["inputs"][1] if strings is not None and strings["op"] == "GatherNd" else None
    return ids_ref, coords


def _one_row_per_id(spec, ref, ids_ref, coords) -> bool:
    if through_identity(spec, ref) == ids_ref:
        return True
    node, j = producer(spec, through_identity(spec, ref))
    return (coords is not None and node is not None and node["op"] == "SparseReshape" and j == 0
            and node["inputs"][0] == coords)


def drop_hashed_id_filters(spec) -> Tuple[dict, int]:
    same = {}
    for k, node in enumerate(spec["nodes"]):
        if node["op"] != "GatherV2" or const_values(spec, node["inputs"][2]) != [0]:
            continue
        found = _hashed_ids_filter(spec, node["inputs"][1])
        if found is not None and _one_row_per_id(spec, node["inputs"][0], *found):
            same[f"{k}:0"] = node["inputs"][0]
    if not same:
        return spec, 0
    return prune_dead_nodes(replace_uses(spec, same)), len(same)

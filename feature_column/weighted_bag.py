"""Vertical fusion of a weighted embedding_lookup_sparse's tail into one node.

A weighted categorical column's embedding (combiner sum or mean) ends in

    f = SparseFillEmptyRows(indices, ids, dense_shape, 0)
    fw = SparseFillEmptyRows(indices, weights, dense_shape, 1.0)
    w = Reshape(fw:1, ConcatV2(Shape(fw:1), [1]))                        (or [-1, 1])
    u = Unique(f:1)
    s = SegmentSum(Mul(GatherV2(ResourceGather(table, u:0), u:1), w), rows)
    r = s  or  DivNoNan(s, SegmentSum(w, rows))                          (sum or mean)
    out = Select(Tile(Reshape(f:2, [-1, 1]), ...), ZerosLike(r), r)

with rows = Cast(StridedSlice(f:0)[:, 0]). ``out`` becomes ``_BladeWeightedBag(indices, ids,
weights, dense_shape, table)`` (kernels/weighted_bag.py), the same bits. The weights' fill value
only reaches rows the Select zeroes: any is taken. The chain's head (pruning ids < 0 and weights
<= 0) stays as it is.
"""
from __future__ import annotations

from typing import List, Tuple

from ..kernels.weighted_bag import MEAN, SUM
from .embedding_bag import is_first_column, table_gather, zeroed_empty_rows
from .spec import const_values, producer, producer_op, replace_matches

FUSED_OP = "_BladeWeightedBag"


def _weight_column(spec, ref, fill):
    """The weights' SparseFillEmptyRows node when ``ref`` is its values as a column ([n, 1]), filled
    at the same indices and dense shape as the ids' ``fill``; else None."""
    reshape = producer_op(spec, ref, "Reshape")
    if reshape is None:
        return None
    values, target = reshape["inputs"]
    weights, j = producer(spec, values)
    if weights is None or weights["op"] != "SparseFillEmptyRows" or j != 1:
        return None
    if weights["inputs"][0] != fill["inputs"][0] or weights["inputs"][2] != fill["inputs"][2]:
        return None
    if const_values(spec, target) != [-1, 1]:
        concat = producer_op(spec, target, "ConcatV2")
        if concat is None or len(concat["inputs"]) != 3 or const_values(spec, concat["inputs"][2]) != [0] \
                or const_values(spec, concat["inputs"][1]) != [1]:
            return None
        shape = producer_op(spec, concat["inputs"][0], "Shape")
        if shape is None or shape["inputs"][0] != values:
            return None
    return weights


def _products(spec, ref, fill, fill_ref):
    """(table, weights' fill, rows) when ``ref`` is SegmentSum(Mul(GatherV2(gather, u:1), w), rows)
    of the ids' ``fill`` (``fill_ref``: its node's ref); else None."""
    total = producer_op(spec, ref, "SegmentSum")
    if total is None or not is_first_column(spec, total["inputs"][1], fill_ref):
        return None
    product = producer_op(spec, total["inputs"][0], "Mul")
    if product is None:
        return None
    for rows_ref, w_ref in (product["inputs"], product["inputs"][::-1]):
        rows = producer_op(spec, rows_ref, "GatherV2")
        weights = _weight_column(spec, w_ref, fill)
        if rows is None or weights is None or const_values(spec, rows["inputs"][2]) != [0]:
            continue
        gathered = table_gather(spec, rows["inputs"][0], rows["inputs"][1])
        if gathered is not None and gathered[1]["inputs"][0] == fill_ref + ":1":
            return gathered[0], weights, total["inputs"][1]
    return None


def _match(spec, select) -> Tuple[List[str], dict] | None:
    found = zeroed_empty_rows(spec, select)
    if found is None:
        return None
    reduced, fill, fill_ref = found
    divide = producer_op(spec, reduced, "DivNoNan")
    products = _products(spec, divide["inputs"][0] if divide is not None else reduced, fill, fill_ref)
    if products is None:
        return None
    table, weights, rows = products
    if divide is not None:  # the mean: over the SegmentSum of the same weights, by the same rows
        total = producer_op(spec, divide["inputs"][1], "SegmentSum")
        if total is None or total["inputs"][1] != rows or _weight_column(spec, total["inputs"][0], fill) is not weights:
            return None
    indices, ids, dense_shape, _ = fill["inputs"]
    return [indices, ids, weights["inputs"][1], dense_shape, table], {"mode": MEAN if divide is not None else SUM}


def fuse_weighted_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

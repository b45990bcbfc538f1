"""Vertical fusion of a weighted embedding_lookup_sparse's tail into one node.

A weighted categorical column's embedding (any combiner) ends in

    f = SparseFillEmptyRows(indices, ids, dense_shape, 0)
    fw = SparseFillEmptyRows(indices, weights, dense_shape, 1.0)
    w = Reshape(fw:1, ConcatV2(Shape(fw:1), [1]))                        (or [-1, 1])
    u = Unique(f:1)
    s = SegmentSum(Mul(GatherV2(ResourceGather(table, u:0), u:1), w), rows)
    r = s  or  DivNoNan(s, SegmentSum(w, rows))                          (sum or mean)
           or  DivNoNan(s, Sqrt(SegmentSum(Pow(w, 2), rows)))              (sqrtn)
    out = Select(Tile(Reshape(f:2, [-1, 1]), ...), ZerosLike(r), r)

with rows = Cast(StridedSlice(f:0)[:, 0]). ``out`` becomes ``_BladeWeightedBag(indices, ids,
weights, dense_shape, table)`` (kernels/weighted_bag.py), the same bits. The weights' fill value
only reaches rows the Select zeroes: any is taken.

Over a column of dense strings or integers S and dense weights W the bag's inputs are the
column's head (``_head``):

    ids = StringToHashBucketFast(GatherNd(S, s)),  s = Where(NotEqual(S, ""))
       or its lookup in a frozen vocabulary (vocabulary_bag.py)
       or an integer column's ids of GatherNd(S, s), s = Where(NotEqual(S, ignore)) (int_bag.py)
    values = GatherNd(W, Where(NotEqual(W, 0.0)))
    keep = Reshape(Where(LogicalAnd(GreaterEqual(ids, 0), Fill(Shape(values), True))), [-1])
    x' = GatherV2(x, keep) for x in (SparseReshape(s, Shape(S), new_shape):0 or s, ids, values)
    x'' = GatherV2(x', Reshape(Where(Greater(values', 0)), [-1]))      (mean and sqrtn)

and the whole column becomes ``_BladeWeightedStringBag(S, new_shape, W, table)``,
``_BladeWeightedVocabularyBag(S, new_shape, W, table, vocabulary...)`` or
``_BladeWeightedIntBag(S, new_shape, W, table, ignore, vocabulary...)`` (kernels/weighted_bag.py):
one pass.
"""
from __future__ import annotations

from typing import List, Tuple

from ..codegen.parts import ref_meta
from ..kernels.weighted_bag import MEAN, SQRTN, SUM
from .embedding_bag import is_first_column, table_gather, zeroed_empty_rows
from .int_bag import INT_DTYPES, id_source, widened
from .spec import const_values, producer, producer_op, replace_matches, through_identity
from .string_bag import dense_bag, kept_coordinates, strings_bag
from .vocabulary_bag import string_lookup

FUSED_OP = "_BladeWeightedBag"
STRING_OP, VOCABULARY_OP, INT_OP = "_BladeWeightedStringBag", "_BladeWeightedVocabularyBag", "_BladeWeightedIntBag"


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
    mode = SUM if divide is None else _divisor_mode(spec, divide["inputs"][1], rows, weights, fill)
    if mode is None:
        return None
    indices, ids, dense_shape, _ = fill["inputs"]
    return [indices, ids, weights["inputs"][1], dense_shape, table], {"mode": mode}


def _divisor_mode(spec, ref, rows, weights, fill):
    """MEAN when ``ref`` is the SegmentSum of the same weights by the same rows, SQRTN when it is
    the Sqrt of the SegmentSum of their squares, Pow(w, 2); else None."""
    root = producer_op(spec, ref, "Sqrt")
    total = producer_op(spec, root["inputs"][0] if root is not None else ref, "SegmentSum")
    if total is None or total["inputs"][1] != rows:
        return None
    summed = total["inputs"][0]
    if root is not None:
        square = producer_op(spec, summed, "Pow")
        if square is None or const_values(spec, square["inputs"][1]) != [2]:
            return None
        summed = square["inputs"][0]
    if _weight_column(spec, summed, fill) is not weights:
        return None
    return SQRTN if root is not None else MEAN


def _kept_by(spec, refs):
    """(the refs before the gathers, the node of the condition) when every ref is GatherV2(x,
    keep, 0) with one keep = Reshape(Where(condition), [-1]); else None."""
    gathers = [producer_op(spec, ref, "GatherV2") for ref in refs]
    if any(g is None or const_values(spec, g["inputs"][2]) != [0] for g in gathers) \
            or len({g["inputs"][1] for g in gathers}) != 1:
        return None
    reshape = producer_op(spec, gathers[0]["inputs"][1], "Reshape")
    if reshape is None or const_values(spec, reshape["inputs"][1]) != [-1]:
        return None
    where = producer_op(spec, reshape["inputs"][0], "Where")
    condition = producer(spec, through_identity(spec, where["inputs"][0]))[0] if where is not None else None
    return ([through_identity(spec, g["inputs"][0]) for g in gathers], condition) if condition is not None else None


def _compares(spec, node, op, ref, value) -> bool:
    """Whether ``node`` is ``op``(ref, value) with ``value`` a constant."""
    return node is not None and node["op"] == op and through_identity(spec, node["inputs"][0]) == ref \
        and const_values(spec, node["inputs"][1]) == [value]


def _head(spec, bag):
    """(indices, ids, W) before the column's id and weight filters, when ``bag`` (a
    _BladeWeightedBag) reads them through those and the weights are W's non-zero values; else None."""
    if bag["op"] != FUSED_OP:
        return None
    refs = bag["inputs"][:3]
    if bag["attrs"]["mode"] != SUM:  # the weights > 0 filter first
        found = _kept_by(spec, refs)
        if found is None or not _compares(spec, found[1], "Greater", found[0][2], 0):
            return None
        refs = found[0]
    found = _kept_by(spec, refs)  # the ids >= 0 filter, shaped by the weights
    if found is None or found[1]["op"] != "LogicalAnd":
        return None
    (indices, ids, values), both = found
    valid = producer(spec, through_identity(spec, both["inputs"][0]))[0]
    ones = producer_op(spec, both["inputs"][1], "Fill")
    shape = producer_op(spec, ones["inputs"][0], "Shape") if ones is not None else None
    if not _compares(spec, valid, "GreaterEqual", ids, 0) or shape is None \
            or through_identity(spec, shape["inputs"][0]) != values or const_values(spec, ones["inputs"][1]) != [True]:
        return None
    gathered = producer_op(spec, values, "GatherNd")
    w, zero = kept_coordinates(spec, gathered["inputs"][1]) if gathered is not None else (None, None)
    if w is None or w != through_identity(spec, gathered["inputs"][0]) or const_values(spec, zero) != [0]:
        return None
    return indices, ids, w


def _string_match(spec, bag):
    head = _head(spec, bag)
    hashed = producer_op(spec, head[1], "StringToHashBucketFast") if head is not None else None
    found = strings_bag(spec, head[0], bag["inputs"][3], hashed["inputs"][0]) if hashed is not None else None
    if found is None:
        return None
    return list(found) + [head[2], bag["inputs"][4]], {"num_buckets": hashed["attrs"]["num_buckets"],
                                                      "mode": bag["attrs"]["mode"]}


def _vocabulary_match(spec, bag):
    head = _head(spec, bag)
    find = string_lookup(spec, head[1]) if head is not None else None
    if find is None:
        return None
    found = strings_bag(spec, head[0], bag["inputs"][3], through_identity(spec, find["inputs"][0]))
    if found is None:
        return None
    return list(found) + [head[2], bag["inputs"][4]] + find["inputs"][1:], {
        "num_buckets": find["attrs"].get("num_buckets", 0), "mode": bag["attrs"]["mode"]}


def _int_match(spec, bag):
    head = _head(spec, bag)
    if head is None:
        return None
    indices, ids, w = head
    kind, values, vocabulary, num_buckets = id_source(spec, ids)
    found = dense_bag(spec, indices, bag["inputs"][3], widened(spec, values))
    if found is None or ref_meta(spec, found[0])[0] not in INT_DTYPES:
        return None
    x, new_shape, ignore = found
    return [x, new_shape, w, bag["inputs"][4], ignore] + [ignore if ref is None else ref for ref in vocabulary], {
        "kind": kind, "num_buckets": num_buckets, "mode": bag["attrs"]["mode"]}


def fuse_weighted_bags(spec) -> Tuple[dict, int]:
    """The weighted tails."""
    return replace_matches(spec, _match, FUSED_OP)


def fuse_weighted_columns(spec) -> Tuple[dict, int]:
    """The weighted tails over a dense string or integer column, with the column's head."""
    spec, strings = replace_matches(spec, _string_match, STRING_OP)
    spec, words = replace_matches(spec, _vocabulary_match, VOCABULARY_OP)
    spec, ints = replace_matches(spec, _int_match, INT_OP)
    return spec, strings + words + ints

"""Vertical fusion of an identity, integer-vocabulary or hashed-integer embedding column over a
dense integer input.

After ``fuse_embedding_bags`` such a column reads (its vocabulary frozen by passes/freeze_tables.py;
``ignore`` is the column's ignore value, -1 by default):

    w = Where(NotEqual(X, ignore))
    ids = GatherNd(X, w)                 (categorical_column_with_identity)
       or SelectV2(LogicalOr(GreaterEqual(ids, n), Less(ids, 0)), Fill(Shape(ids), default), ids)
                                                                   (the same with a default_value)
       or _BladeTableFind(GatherNd(X, w), default, index...)       (with_vocabulary_list or _file)
       or _BladeHashInts(GatherNd(X, w))                           (with_hash_bucket: int_hash.py)
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])              (the id filter, optional)
    r = SparseReshape(w, Shape(X, out_type=int64), new_shape)      (optional)
    out = _BladeEmbeddingBag(GatherV2(r:0 or w, keep), GatherV2(ids, keep), r:1 or Shape(X), table)

``out`` becomes ``_BladeIntBag(X, new_shape, table, ignore, default, index...)`` (kernels/int_bag.py;
the other kinds read no vocabulary and get ``ignore`` in its four places, but an identity column's
default value in the first), placed as the string bags are (string_bag.py ``dense_bag``): one
pass, the same bits and errors. An int32 X is read through the Cast to int64 that comes after
GatherNd: the kernel widens each value itself.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta
from ..kernels.int_bag import HASH, IDENTITY, IDENTITY_DEFAULT, VOCABULARY
from ..passes.freeze_tables import TABLE_FIND
from .embedding_bag import FUSED_OP as BAG_OP
from .hashed_id_filter import before_id_filter
from .int_hash import FUSED_OP as HASH_INTS
from .spec import const_values, producer, producer_op, replace_matches, through_identity
from .string_bag import dense_bag

FUSED_OP = "_BladeIntBag"
_INT32, _INT64 = 3, 9
INT_DTYPES = (_INT32, _INT64)


def widened(spec, ref):
    """The int32 value behind ``ref`` when it is Cast(int32 -> int64) of it (exact: the kernel
    widens each value itself), else ``ref``."""
    cast = producer_op(spec, ref, "Cast")
    if cast is not None and cast["attrs"]["SrcT"] == _INT32 and cast["attrs"]["DstT"] == _INT64:
        return through_identity(spec, cast["inputs"][0])
    return through_identity(spec, ref)


def _with_default(spec, ids):
    """(values, default, n) when ``ids`` is an identity column's SelectV2 putting the default in
    place of values outside [0, n) (either operand order of the LogicalOr), else None."""
    select = producer_op(spec, ids, "SelectV2")
    if select is None or select["outputs"][0][0] != _INT64:
        return None
    condition, filled, values = select["inputs"]
    values = through_identity(spec, values)
    either, fill = producer_op(spec, condition, "LogicalOr"), producer_op(spec, filled, "Fill")
    if either is None or fill is None:
        return None
    shape = producer_op(spec, fill["inputs"][0], "Shape")
    default = const_values(spec, fill["inputs"][1])
    if shape is None or through_identity(spec, shape["inputs"][0]) != values or default is None or len(default) != 1:
        return None
    bounds = {}
    for ref in either["inputs"]:
        compare = producer_op(spec, ref, "GreaterEqual", "Less")
        if compare is None or through_identity(spec, compare["inputs"][0]) != values:
            return None
        bounds[compare["op"]] = const_values(spec, compare["inputs"][1])
    upper = bounds.get("GreaterEqual")
    if bounds.get("Less") != [0] or upper is None or len(upper) != 1:
        return None
    return values, fill["inputs"][1], int(upper[0])


def id_source(spec, ids):
    """(kind, the ref it reads the values from, the vocabulary's inputs (None for those the kind
    does not read), num_buckets)."""
    node, _ = producer(spec, ids)
    if node is not None and node["op"] == TABLE_FIND and not node["attrs"]["string_keys"] \
            and node["outputs"][0][0] == _INT64:
        return VOCABULARY, node["inputs"][0], node["inputs"][1:], 0
    if node is not None and node["op"] == HASH_INTS:
        return HASH, node["inputs"][0], [None] * 4, node["attrs"]["num_buckets"]
    found = _with_default(spec, ids)
    if found is not None:
        values, default, n = found
        return IDENTITY_DEFAULT, values, [default] + [None] * 3, n
    return IDENTITY, ids, [None] * 4, 0


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    indices, ids, filtered = before_id_filter(spec, indices, ids)
    kind, values, vocabulary, num_buckets = id_source(spec, through_identity(spec, ids))
    found = dense_bag(spec, indices, dense_shape, widened(spec, values))
    if found is None or ref_meta(spec, found[0])[0] not in INT_DTYPES:
        return None
    x, new_shape, ignore = found
    return [x, new_shape, table, ignore] + [ignore if ref is None else ref for ref in vocabulary], {
        "kind": kind, "num_buckets": num_buckets, "drop_negative": int(filtered), "mode": bag["attrs"]["mode"]}


def fuse_int_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

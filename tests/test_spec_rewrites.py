"""The feature-column spec rewrites (feature_column/): what they change and what they leave."""

import tensorflow as tf

from conftest import hashed_column_spec
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.feature_column.hashed_id_filter import drop_hashed_id_filters


def _ops(spec):
    return [n["op"] for n in spec["nodes"]]


def test_hashed_string_column_becomes_one_string_bag():
    spec = hashed_column_spec(tf.string)
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = _ops(spec)
    assert ops.count("_BladeStringBag") == 1
    for gone in ("GreaterEqual", "NotEqual", "Where", "GatherNd", "StringToHashBucketFast", "SparseReshape",
                 "_BladeEmbeddingBag"):
        assert gone not in ops


def test_int_hashed_column_loses_its_id_filter():
    spec, n = drop_hashed_id_filters(hashed_column_spec(tf.int64))
    assert n == 2 and "GreaterEqual" not in _ops(spec)


def test_int_hashed_column_hashes_without_strings():
    """AsString + StringToHashBucketFast become _BladeHashInts, which the column's bag then takes in
    (a _BladeIntBag of kind HASH: feature_column/int_bag.py, tests/test_int_bag.py)."""
    spec = hashed_column_spec(tf.int64)
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
        if rewrite.__name__ == "fuse_int_hashes":
            assert _ops(spec).count("_BladeHashInts") == 1
    ops = _ops(spec)
    assert [n["attrs"]["kind"] for n in spec["nodes"] if n["op"] == "_BladeIntBag"] == [2], ops
    assert "AsString" not in ops and "StringToHashBucketFast" not in ops and "_BladeHashInts" not in ops


def _filter_spec(ids_producer):
    """GatherV2(ids, Reshape(Where(GreaterEqual(ids, 0)), [-1])) over ``ids_producer`` nodes."""
    const = lambda v, dtype=9: {"name": "c", "op": "Const", "inputs": [], "outputs": [[dtype, 1]],  # noqa: E731
                                "attrs": {"dtype": dtype, "value": {"dtype": dtype, "shape": [1], "values": v}}}
    nodes = ids_producer + [
        const([0]),
        {"name": "ge", "op": "GreaterEqual", "inputs": [f"{len(ids_producer) - 1}:0", f"{len(ids_producer)}:0"],
         "attrs": {}, "outputs": [[10, 1]]},
    ]
    k = len(nodes)
    nodes += [{"name": "w", "op": "Where", "inputs": [f"{k - 1}:0"], "attrs": {}, "outputs": [[9, 2]]},
              const([-1], 3),
              {"name": "r", "op": "Reshape", "inputs": [f"{k}:0", f"{k + 1}:0"], "attrs": {}, "outputs": [[9, 1]]},
              const([0], 3),
              {"name": "g", "op": "GatherV2", "inputs": [f"{len(ids_producer) - 1}:0", f"{k + 2}:0", f"{k + 3}:0"],
               "attrs": {"batch_dims": 0}, "outputs": [[9, 1]]}]
    return {"inputs": [{"dtype": 9, "rank": 1, "read_variable": False}], "nodes": nodes,
            "outputs": [f"{len(nodes) - 1}:0"]}


def test_filter_on_ids_that_can_be_negative_stays():
    # identity / vocabulary columns: ids come from the input and may be < 0; the filter matters
    spec = _filter_spec([{"name": "id", "op": "Identity", "inputs": ["in:0"], "attrs": {}, "outputs": [[9, 1]]}])
    assert drop_hashed_id_filters(spec) == (spec, 0)

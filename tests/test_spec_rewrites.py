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
    spec = hashed_column_spec(tf.int64)
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = _ops(spec)
    assert ops.count("_BladeHashInts") == 1 and "AsString" not in ops and "StringToHashBucketFast" not in ops


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


def test_ragged_mean_counts_without_summing_ones(rng):
    """reduce_mean over a ragged axis counts each row with _BladeSegmentCount instead of
    UnsortedSegmentSum(Fill(Shape(values), 1)), with TF's results; empty rows still give TF's
    0/0 = NaN."""
    import numpy as np

    from conftest import check_one_op_on_tags_fields, fused_specs
    from tf_blade.feature_column.segment_count import count_segments_of_ones
    table = tf.constant(rng.standard_normal((100, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tags_mean(s):
        ids = tf.strings.to_hash_bucket_fast(tf.strings.split(s, "|"), 100)
        return tf.reduce_mean(tf.ragged.map_flat_values(tf.gather, table, ids), axis=1)

    (spec,) = fused_specs(tags_mean)
    spec, n = count_segments_of_ones(spec)
    assert n == 1 and "Fill" not in _ops(spec) and _ops(spec).count("UnsortedSegmentSum") == 1
    check_one_op_on_tags_fields(tags_mean, rng, batches=(0, 1, 100))

    import tf_blade

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int64)])
    def ids_mean(ids):
        return tf.reduce_mean(tf.ragged.map_flat_values(tf.gather, table, ids), axis=1)

    fused = tf_blade.optimize(ids_mean, min_cluster_size=1).signatures["serving_default"]
    ids = tf.ragged.constant([[1, 2, 2], [], [7], [], [3, 99, 5, 5]], tf.int64)
    got = fused(*tf.nest.flatten(ids, expand_composites=True)).numpy()
    assert np.isnan(got[1]).all()
    np.testing.assert_array_equal(got, ids_mean(ids).numpy())

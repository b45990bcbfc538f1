"""The v1 feature-column entry points (graph mode, through tf.compat.v1.wrap_function):
shared_embedding_columns under input_layer (two columns reading one table) and linear_model over
hashed, crossed and numeric columns. Optimized, every sparse column of the layer is inside one
fused op, and the results are bit-exact with TF's."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import error_core, op_counts

FCv1 = tf.compat.v1.feature_column
SPECS = {"a": tf.TensorSpec([None, 3], tf.string), "b": tf.TensorSpec([None, 3], tf.string),
         "n": tf.TensorSpec([None, 1], tf.float32)}
SPARSE_OPS = {"StringToHashBucketFast", "SparseCross", "SparseSegmentMean", "SparseSegmentSum", "Unique",
              "SparseFillEmptyRows", "ResourceGather", "GatherV2", "Where", "SparseReshape"}


def shared_embeddings(x):
    a, b = FCv1.categorical_column_with_hash_bucket("a", 30), FCv1.categorical_column_with_hash_bucket("b", 30)
    return FCv1.input_layer(x, FCv1.shared_embedding_columns([a, b], 4, combiner="mean") + [FCv1.numeric_column("n")])


def linear(x):
    a, b = FCv1.categorical_column_with_hash_bucket("a", 30), FCv1.categorical_column_with_hash_bucket("b", 30)
    return FCv1.linear_model(x, [a, b, FCv1.numeric_column("n"), FCv1.crossed_column(["a", "b"], 50)])


@pytest.fixture(scope="module", params=[shared_embeddings, linear], ids=lambda f: f.__name__)
def models(request):
    import tf_keras  # noqa: F401  (the v1 layers' variables come from the v1 variable scope)
    wrapped = tf.compat.v1.wrap_function(request.param, [SPECS])
    n_user = len(wrapped.inputs) - len(wrapped.captured_inputs)
    reference = wrapped.prune(wrapped.inputs[:n_user], wrapped.outputs)  # callable with flat tensors
    return reference, tf_blade.optimize(wrapped, bridge="native").signatures["serving_default"]


def test_sparse_columns_are_one_fused_op(models):
    _, opt = models
    counts = op_counts(opt)
    assert counts["BladeFusedCall"] == 1 and not SPARSE_OPS & set(counts), counts


@pytest.mark.parametrize("n", [0, 1, 64])
def test_v1_columns_match_tensorflow(models, rng, n):
    reference, opt = models
    words = np.array([b"", b"q", b"r", "\u00e9".encode(), b"s" * 40], dtype=object)
    x = {"a": words[rng.integers(0, 5, (n, 3))], "b": words[rng.integers(0, 5, (n, 3))],
         "n": rng.standard_normal((n, 1)).astype(np.float32)}
    flat = [tf.constant(x[k]) for k in sorted(x)]
    try:
        want = reference(*flat)[0].numpy()
    except tf.errors.InvalidArgumentError as theirs:  # linear_model's own reshape refuses an empty batch
        with pytest.raises(tf.errors.InvalidArgumentError) as ours:
            opt(*flat)
        assert error_core(ours.value.message) == error_core(theirs.message)
        return
    got = opt(*flat)
    got = list(got.values())[0] if isinstance(got, dict) else got
    np.testing.assert_array_equal(want, got.numpy())

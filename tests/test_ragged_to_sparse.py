"""RaggedTensorToSparse (kernels/ragged_to_sparse.py) against TF: random row splits of both
dtypes, empty rows and batches, every check TF makes on the splits (same message); and fused,
where ``tf.strings.split(s).to_sparse()`` feeds a hashed categorical column in one op."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import tf_blade
from conftest import check_one_op_on_tags_fields, op_counts
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.ragged_to_sparse import ragged_to_sparse


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("rows", [0, 1, 7, 300])
def test_indices_and_shape_match_tf(rng, dtype, rows):
    lengths = rng.integers(0, 5, rows) * (rng.random(rows) < 0.8)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(dtype)
    values = np.arange(splits[-1], dtype=np.int64)
    want = tf.raw_ops.RaggedTensorToSparse(rt_nested_splits=[tf.constant(splits)], rt_dense_values=tf.constant(values))
    err = new_error_buffer()
    indices, shape = ragged_to_sparse(splits, values.shape[0], err)
    assert err[0] == 0
    np.testing.assert_array_equal(indices, want.sparse_indices.numpy().reshape(-1, 2))
    np.testing.assert_array_equal(shape, want.sparse_dense_shape.numpy())


@pytest.mark.parametrize("splits,n_values", [([], 1), ([1, 2], 1), ([0, 2, 1], 2), ([0, 1, 3], 2), ([0, 1], 3),
                                             ([0, -1], 0)])
def test_bad_splits_raise_tfs_message(splits, n_values):
    with pytest.raises(tf.errors.InvalidArgumentError) as want:
        tf.raw_ops.RaggedTensorToSparse(rt_nested_splits=[tf.constant(splits, tf.int64)],
                                        rt_dense_values=tf.range(n_values, dtype=tf.int64))
    err = new_error_buffer()
    ragged_to_sparse(np.array(splits, np.int64), n_values, err)
    assert err[0] != 0 and error_text(err) in want.value.message


def test_split_to_sparse_feeds_a_hashed_column_in_one_op(rng):
    column = tf.feature_column.embedding_column(
        tf.feature_column.categorical_column_with_hash_bucket("tags", 1000), 8, combiner="sqrtn")
    layer = tf_keras.layers.DenseFeatures([column])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def features(s):
        return layer({"tags": tf.strings.split(s, "|").to_sparse()})

    check_one_op_on_tags_fields(features, rng, batches=(0, 1, 200))


def test_ragged_ids_to_sparse_fused(rng):
    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int32)])
    def sparse(r):
        st = r.to_sparse()
        return {"indices": st.indices, "values": st.values * 3, "shape": st.dense_shape}

    fused = tf_blade.optimize(sparse, min_cluster_size=1).signatures["serving_default"]
    assert "RaggedTensorToSparse" not in op_counts(fused), op_counts(fused)
    for n in (0, 1, 50):
        r = tf.RaggedTensor.from_row_lengths(rng.integers(-5, 5, 0), tf.zeros(0, tf.int32)) if n == 0 else \
            tf.ragged.constant([list(rng.integers(-9, 9, rng.integers(0, 4))) for _ in range(n)], tf.int64, row_splits_dtype=tf.int32)
        got, want = fused(*tf.nest.flatten(r, expand_composites=True)), sparse(r)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())

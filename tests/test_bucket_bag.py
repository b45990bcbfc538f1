"""The fused bucketized-column embedding (feature_column/bucket_bag.py): the kernel against TF's own
chain (BucketizedColumn's ids and coordinates, SparseReshape, embedding bag), the rewrite on
feature-column models, bit-exact against TF."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import fused_specs
from test_embedding_bag import COMBINERS, tf_chain
from test_string_bag import same_as_tf
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.feature_column.bucket_bag import fuse_bucket_bags
from tf_blade.kernels.bucket_bag import bucket_bag
from tf_blade.kernels.errors import error_text, new_error_buffer

FC = tf.feature_column


def tf_bucket_chain(x, boundaries, new_shape, table, combiner, columns=None):
    """What an embedding of a bucketized column computes from a [n, d] input, op for op."""
    x = tf.constant(x)
    d = x.shape[1] if columns is None else columns
    b = tf.raw_ops.Bucketize(input=x, boundaries=boundaries)
    n = tf.shape(b)[0]
    offsets = tf.tile(tf.range(d), [n])
    ids = tf.reshape(b, [-1]) + offsets * (len(boundaries) + 1)
    rows = tf.reshape(tf.tile(tf.expand_dims(tf.range(0, n), 1), [1, d]), [-1])
    indices = tf.cast(tf.transpose(tf.stack([rows, offsets])), tf.int64)
    shape = tf.cast(tf.stack([n, d]), tf.int64)
    if new_shape is not None:
        indices, shape = tf.raw_ops.SparseReshape(input_indices=indices, input_shape=shape,
                                                  new_shape=tf.constant(new_shape, tf.int64))
    return tf_chain(indices, tf.cast(ids, tf.int64), shape, table, combiner)


def _run(x, boundaries, new_shape, table, mode, columns=None):
    shape = np.array(new_shape if new_shape is not None else x.shape, np.int64)
    bounds = np.array(boundaries, np.float32).astype(np.float64 if x.dtype == np.float64 else np.float32)
    err = new_error_buffer()
    out = bucket_bag(x, shape, table, bounds, x.shape[1] if columns is None else columns, mode, err)
    return out, (error_text(err) if err[0] else None)


def _values(rng, shape, dtype, boundaries):
    """Random values, some exactly on a boundary, some infinite or NaN (floats)."""
    x = rng.standard_normal(shape) * 4
    on = rng.random(shape) < 0.2
    x[on] = rng.choice(boundaries, size=int(on.sum()))
    if np.issubdtype(dtype, np.floating):
        x[rng.random(shape) < 0.05] = rng.choice([np.nan, np.inf, -np.inf])
    return x.astype(dtype)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_kernel_matches_tf_chain(mode, dtype):
    rng = np.random.default_rng()
    for rows, d in ((0, 2), (1, 1), (7, 3), (64, 2), (5, 12)):
        boundaries = sorted(rng.choice([-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 7.0], size=int(rng.integers(1, 6))))
        x = _values(rng, (rows, d), dtype, boundaries)
        table = rng.standard_normal(((len(boundaries) + 1) * d, 4)).astype(rng.choice([np.float32, np.float64]))
        for new_shape in (None, [rows, d], [-1, d], [rows * d, -1], [rows * d, 1], [1, rows * d]):
            got, err = _run(x, boundaries, new_shape, table, mode)  # an error: [0, -1] of an empty batch
            same_as_tf(got, err, lambda: tf_bucket_chain(x, boundaries, new_shape, table, COMBINERS[mode]))


@pytest.mark.parametrize("new_shape", [[3, 3], [-1, -1], [2, -5], [0, -1]])
def test_bad_shape_gets_tf_sparse_reshape_message(new_shape):
    x = np.array([[0.5, 2.0], [-1.0, 9.0]], np.float32)
    table = np.ones((6, 3), np.float32)
    _, err = _run(x, [0.0, 1.0], new_shape, table, 1)
    assert err is not None
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
        tf_bucket_chain(x, [0.0, 1.0], new_shape, table, "mean")
    assert err in tf_err.value.message


def test_table_smaller_than_the_buckets_is_the_gathers_error():
    x = np.array([[0.5, 2.0], [-1.0, 9.0]], np.float32)
    table = np.ones((4, 3), np.float32)  # the second column's ids are 3 + bucket
    _, err = _run(x, [0.0, 1.0], None, table, 0)
    assert err is not None and "is not in [0, 4)" in err, err
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"is not in \[0, 4\)"):
        tf_bucket_chain(x, [0.0, 1.0], None, table, "sum")


def test_an_input_of_another_width_than_the_columns_is_an_error_like_tf():
    x = np.array([[0.5, 2.0, 3.0], [-1.0, 9.0, 0.0]], np.float32)
    table = np.ones((9, 3), np.float32)
    _, err = _run(x, [0.0, 1.0], None, table, 0, columns=2)
    assert err == "Incompatible shapes: [6] vs. [4]", err
    with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
        tf_bucket_chain(x, [0.0, 1.0], None, table, "sum", columns=2)


# Bucketized embeddings of every input kind: float32, float64, int64; d of 1 (Grappler drops a
# Tile there), 2, 3, 4; each combiner; and a bucketized column used as is (one-hot: no bag).
_COLUMNS = [(2, "mean", tf.float32), (1, "sum", tf.float64), (3, "sqrtn", tf.int64), (4, "mean", tf.float32)]


def _bucket_model():
    import tf_keras
    columns, specs = [], {}
    for i, (d, combiner, dtype) in enumerate(_COLUMNS):
        numeric = FC.numeric_column(f"p{i}", shape=(d,), dtype=dtype)
        bucketized = FC.bucketized_column(numeric, [-1.0, 0.0, 0.5, 1.0, 5.0][:2 + i])
        columns.append(FC.embedding_column(bucketized, 3, combiner=combiner))
        specs[f"p{i}"] = tf.TensorSpec([None, d], dtype)
    columns.append(FC.bucketized_column(FC.numeric_column("p0", shape=(2,)), [0.0]))
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module, specs


def test_every_bucketized_embedding_becomes_one_bag():
    module, _ = _bucket_model()
    (spec,) = fused_specs(module, signature="serve")
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [node["op"] for node in spec["nodes"]]
    bags = sorted((n["attrs"]["columns"], n["attrs"]["mode"]) for n in spec["nodes"] if n["op"] == "_BladeBucketBag")
    assert bags == [(1, 0), (2, 1), (3, 2), (4, 1)], bags
    assert ops.count("Bucketize") == 1 and "_BladeEmbeddingBag" not in ops, ops  # the one-hot column's


def test_rewrite_needs_the_columns_own_id_stride():
    module, _ = _bucket_model()
    (spec,) = fused_specs(module, signature="serve")
    for rewrite in SPEC_REWRITES[:SPEC_REWRITES.index(fuse_bucket_bags)]:
        spec, _ = rewrite(spec)
    assert fuse_bucket_bags(spec)[1] == 4
    for node in spec["nodes"]:  # ids = bucket + j * stride: another stride would not be the column's ids
        if node["op"] == "Mul":
            stride = next(spec["nodes"][int(r.split(":")[0])] for r in node["inputs"]
                          if spec["nodes"][int(r.split(":")[0])]["op"] == "Const")
            stride["attrs"]["value"]["values"] = [v + 1 for v in stride["attrs"]["value"]["values"]]
    assert fuse_bucket_bags(spec)[1] == 0


@pytest.fixture(scope="module")
def bucket_model():
    module, specs = _bucket_model()
    return module, specs, tf_blade.optimize(module)


@pytest.mark.parametrize("n", [0, 1, 64])
def test_bucket_bags_match_tensorflow(bucket_model, rng, n):
    module, specs, opt = bucket_model
    x = {name: tf.constant(_values(rng, (n, spec.shape[1]), spec.dtype.as_numpy_dtype, [-1.0, 0.0, 0.5, 1.0, 5.0]))
         for name, spec in specs.items()}
    want = module.serve(x).numpy()
    got = opt.signatures["serve"](**{"x_" + k: v for k, v in x.items()}).numpy()
    np.testing.assert_array_equal(want, got)

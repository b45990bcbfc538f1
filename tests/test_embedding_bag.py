"""The fused embedding-bag: kernel against TF's own chain, and the spec rewrite that uses it."""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.feature_column import embedding_bag as rewrite
from tf_blade.kernels.embedding_bag import embedding_bag
from tf_blade.kernels.errors import OOM_PREFIX, error_text, new_error_buffer

from conftest import COLUMNS, dense_features_function, error_core, fused_specs

COMBINERS = {0: "sum", 1: "mean", 2: "sqrtn"}


def tf_chain(indices, ids, dense_shape, table, combiner):
    """What embedding_lookup_sparse + the empty-row zeroing compute, op for op."""
    sp = tf.SparseTensor(indices, ids, dense_shape)
    filled, empty = tf.sparse.fill_empty_rows(sp, tf.constant(0, tf.int64))
    unique, idx = tf.unique(filled.values)
    rows = tf.gather(table, unique)
    seg = filled.indices[:, 0]
    op = {"sum": tf.raw_ops.SparseSegmentSum, "mean": tf.raw_ops.SparseSegmentMean,
          "sqrtn": tf.raw_ops.SparseSegmentSqrtN}[combiner]
    reduced = op(data=rows, indices=idx, segment_ids=seg)
    return tf.where(tf.tile(tf.reshape(empty, [-1, 1]), [1, table.shape[1]]), tf.zeros_like(reduced), reduced)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_matches_tf_chain(mode, dtype):
    rng = np.random.default_rng()
    for rows in (0, 1, 5, 64):
        counts = rng.integers(0, 25, size=rows)      # segments of 0..24 ids: every TF code path
        counts[rng.random(rows) < 0.2] = 0
        r = np.repeat(np.arange(rows), counts)
        order = rng.permutation(len(r)) if rng.random() < 0.5 else np.arange(len(r))  # unsorted too
        indices = np.stack([r, np.zeros_like(r)], 1)[order].astype(np.int64).reshape(-1, 2)
        table = rng.standard_normal((30, 7)).astype(dtype)
        ids = rng.integers(0, 30, size=len(r)).astype(np.int64)
        shape = np.array([rows, 1], np.int64)
        err = new_error_buffer()
        got = embedding_bag(indices, ids, shape, table, mode, err)
        assert err[0] == 0, error_text(err)
        want = tf_chain(indices, ids, shape, table, COMBINERS[mode]).numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("indices, ids, shape, same_words", [
    ([[5, 0]], [1], [3, 1], True),          # row outside the dense shape
    ([[-1, 0]], [1], [3, 1], True),         # negative row: TF says "-1 >= 3"
    ([[0, 0]], [1], [0, 1], True),          # entries but no rows
    ([[0, 0]], [99], [3, 1], True),         # id outside the table
    ([[0, 0]], [1, 2], [3, 1], False),      # values longer than indices (TF's Python refuses the shapes)
    ([[0, 0]], [1], [1 << 50, 1], False),   # absurd dense shape: OOM (another of the chain's allocations)
])
def test_kernel_bad_input_matches_tf_error(indices, ids, shape, same_words):
    table = np.ones((10, 4), np.float32)
    err = new_error_buffer()
    embedding_bag(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64),
                  np.array(shape, np.int64), table, 1, err)
    assert err[0] != 0
    with pytest.raises((tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError, ValueError)) as theirs:
        tf_chain(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64),
                 np.array(shape, np.int64), tf.constant(table), "mean")
    if same_words:
        assert error_text(err) == error_core(theirs.value.message)
    elif theirs.type is tf.errors.ResourceExhaustedError:
        assert error_text(err).startswith(OOM_PREFIX)


def test_rewrite_fuses_every_column_and_drops_the_chain():
    fn, _ = dense_features_function()
    (spec,) = fused_specs(fn, bridge="native")
    fused, count = rewrite.fuse_embedding_bags(spec)
    ops = [n["op"] for n in fused["nodes"]]
    assert count == len(COLUMNS) == ops.count(rewrite.FUSED_OP)
    for gone in ("SparseFillEmptyRows", "Unique", "ResourceGather", "SparseSegmentMean", "Tile", "ZerosLike"):
        assert gone not in ops


def test_rewrite_leaves_a_foreign_select_alone():
    fn, _ = dense_features_function()
    (spec,) = fused_specs(fn, bridge="native")
    # Swap one Select's branches: it now keeps the default row and zeroes the others.
    victim = next(n for n in spec["nodes"] if n["op"] == "Select")
    victim["inputs"][1], victim["inputs"][2] = victim["inputs"][2], victim["inputs"][1]
    _, count = rewrite.fuse_embedding_bags(spec)
    assert count == len(COLUMNS) - 1


@pytest.mark.parametrize("bridge", ["native", "numpy"])
def test_a_dense_shape_too_big_to_allocate_is_resource_exhausted(bridge):
    # TF raises ResourceExhaustedError (OOM allocating the [2**40] row mask); the fused op said
    # InvalidArgumentError with the same OOM message
    import tf_keras
    import tf_blade
    column = tf.feature_column.categorical_column_with_identity("c", 8, default_value=3)
    layer = tf_keras.layers.DenseFeatures([tf.feature_column.embedding_column(column, 2, combiner="sum")])
    f = tf.function(lambda i, v, s: layer({"c": tf.SparseTensor(i, v, s)}),
                    input_signature=[tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.int64),
                                     tf.TensorSpec([2], tf.int64)])
    opt = tf_blade.optimize(f, bridge=bridge)
    assert opt.report.fused_ops == 1, opt.report
    args = (tf.zeros([0, 2], tf.int64), tf.zeros([0], tf.int64), tf.constant([2**40, 1], tf.int64))
    for fn in (f, opt.signatures["serving_default"]):
        with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating"):
            fn(*args)

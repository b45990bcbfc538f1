"""The fused weighted embedding bag (feature_column/weighted_bag.py): the kernel against TF's own
chain, bad input against TF's errors, and weighted columns of a model, bit-exact."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import error_core, fused_specs
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.weighted_bag import MEAN, SUM, weighted_bag

FC = tf.feature_column
COMBINERS = {SUM: "sum", MEAN: "mean"}


def tf_weighted_chain(indices, ids, weights, dense_shape, table, combiner):
    """What a weighted embedding_lookup_sparse + the empty-row zeroing compute, op for op (raw
    fills: a SparseTensor of mismatched lengths is refused before TF's kernel sees it)."""
    fill = tf.raw_ops.SparseFillEmptyRows
    filled, ids, empty, _ = fill(indices=indices, values=ids, dense_shape=dense_shape,
                                 default_value=tf.constant(0, tf.int64))
    _, weights, _, _ = fill(indices=indices, values=weights, dense_shape=dense_shape,
                            default_value=tf.constant(1, weights.dtype))
    unique, idx = tf.unique(ids)
    rows = tf.gather(tf.gather(table, unique), idx)
    w = tf.reshape(weights, [-1, 1])
    segments = tf.cast(filled[:, 0], tf.int32)
    reduced = tf.math.segment_sum(rows * w, segments)
    if combiner == "mean":
        reduced = tf.math.divide_no_nan(reduced, tf.math.segment_sum(w, segments))
    return tf.where(tf.tile(tf.reshape(empty, [-1, 1]), [1, table.shape[1]]), tf.zeros_like(reduced), reduced)


def assert_same_floats(got, want):
    """The same bits, -0.0 included, but for NaNs, which need only be NaN in the same places: when
    an add meets two NaNs (a NaN weight and an inf - inf), which one it keeps is the compiler's
    choice of operand order (LLVM commutes fadd), and TF's own packet and scalar paths differ."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def _run(indices, ids, weights, shape, table, mode):
    err = new_error_buffer()
    out = weighted_bag(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64), weights,
                       np.array(shape, np.int64), table, mode, err)
    return out, (error_text(err) if err[0] else None)


@pytest.mark.parametrize("mode", [SUM, MEAN])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_matches_tf_chain(mode, dtype):
    rng = np.random.default_rng()
    # no subnormal results: TF's threads flush them, a direct call does not (the fused op runs on TF's)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.0], dtype)
    for rows in (0, 1, 5, 64):
        counts = rng.integers(0, 25, size=rows)  # 0..24 entries a row; one entry a row: SegmentSum's copy
        counts[rng.random(rows) < 0.2] = 0
        counts[rng.random(rows) < 0.2] = 1
        r = np.repeat(np.arange(rows), counts)
        order = rng.permutation(len(r)) if rng.random() < 0.5 else np.arange(len(r))  # unsorted too
        indices = np.stack([r, np.zeros_like(r)], 1)[order].astype(np.int64).reshape(-1, 2)
        table = rng.standard_normal((30, 7)).astype(dtype)
        table[rng.random(table.shape) < 0.1] = 0.0  # -0.0 products with negative weights
        ids = rng.integers(0, 30, size=len(r)).astype(np.int64)
        weights = rng.standard_normal(len(r)).astype(dtype)
        weights[rng.random(len(r)) < 0.1] = rng.choice(special)
        shape = np.array([rows, 1], np.int64)
        got, err = _run(indices, ids, weights, shape, table, mode)
        assert err is None, err
        assert_same_floats(got, tf_weighted_chain(indices, ids, weights, shape, table, COMBINERS[mode]).numpy())


@pytest.mark.parametrize("indices, ids, weights, shape", [
    ([[5, 0]], [1], [1.0], [3, 1]),                     # row outside the dense shape
    ([[0, 0]], [1], [1.0], [0, 1]),                     # entries but no rows
    ([[0, 0]], [99], [1.0], [3, 1]),                    # id outside the table
    ([[0, 0], [7, 0]], [99, 1], [1.0, 1.0], [3, 1]),    # both: the fill's row error comes first
    ([[0, 0], [1, 0]], [1, 2], [1.0], [3, 1]),          # fewer weights than entries
])
def test_kernel_bad_input_matches_tf_error(indices, ids, weights, shape):
    table = np.ones((10, 4), np.float32)
    weights = np.array(weights, np.float32)
    _, err = _run(indices, ids, weights, shape, table, MEAN)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_weighted_chain(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64), weights,
                          np.array(shape, np.int64), tf.constant(table), "mean")
    assert err == error_core(theirs.value.message)


def test_an_empty_row_over_an_empty_table_is_the_gathers_error():
    _, err = _run([[1, 0]], [0], np.ones(1, np.float32), [2, 1], np.ones((0, 3), np.float32), SUM)
    assert err == "indices[0] = 0 is not in [0, 0)"


def _weighted_model(combiners=("mean", "sum")):
    import tf_keras
    columns, specs = [], {}
    for i, combiner in enumerate(combiners):
        ids = (FC.categorical_column_with_hash_bucket(f"s{i}", 40) if i % 2 == 0
               else FC.categorical_column_with_identity(f"s{i}", 40))
        columns.append(FC.embedding_column(FC.weighted_categorical_column(ids, f"w{i}"), 3, combiner=combiner))
        specs[f"s{i}"] = tf.TensorSpec([None, 4], tf.string if i % 2 == 0 else tf.int64)
        specs[f"w{i}"] = tf.TensorSpec([None, 4], tf.float32)
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module


def _fused_ops(module):
    """The ops of the module's clusters once rewritten (sqrtn's Pow splits its layer in two)."""
    ops = []
    for spec in fused_specs(module, signature="serve"):
        for rewrite in SPEC_REWRITES:
            spec, _ = rewrite(spec)
        ops += [node["op"] for node in spec["nodes"]]
    return ops


def test_weighted_columns_become_one_bag_each_and_sqrtn_stays():
    ops = _fused_ops(_weighted_model())
    assert ops.count("_BladeWeightedBag") == 2, ops
    assert not {"SparseFillEmptyRows", "Unique", "ResourceGather", "SegmentSum", "DivNoNan", "Select"} & set(ops), ops
    # sqrtn squares the weights with Pow (the math library's rounding): not fused
    assert "_BladeWeightedBag" not in _fused_ops(_weighted_model(("sqrtn",)))


@pytest.mark.parametrize("n", [0, 1, 64])
def test_weighted_columns_match_tensorflow(n):
    module = _weighted_model()
    opt = tf_blade.optimize(module)
    rng = np.random.default_rng()
    words = np.array([b"a", b"b", b"", b"longer than twenty-two bytes"], dtype=object)
    x = {"s0": tf.constant(words[rng.integers(0, 4, (n, 4))].astype(bytes) if n else np.zeros((0, 4), bytes)),
         "s1": tf.constant(rng.integers(-1, 40, (n, 4)))}  # -1: no id
    for name, s in (("w0", x["s0"].numpy() != b""), ("w1", x["s1"].numpy() >= 0)):
        # a weight for every id (and none elsewhere), some of them <= 0 (dropped), NaN or inf
        weights = rng.choice(np.array([0.5, 2.0, -1.0, 0.25, np.nan, np.inf, 3.0], np.float32), (n, 4))
        x[name] = tf.constant(np.where(s, weights, 0.0).astype(np.float32))
    assert_same_floats(opt.signatures["serve"](**{"x_" + k: v for k, v in x.items()}).numpy(), module.serve(x).numpy())

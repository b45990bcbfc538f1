"""The spine end to end: optimized feature-column models give TF's results, bit for bit."""

import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from tf_blade.runtime import compiler

from conftest import COLUMNS, dense_features_function, error_core, flat_inputs, op_counts, optimize_uncompiled, random_batch

FEATURE_COLUMN_OPS = {
    "AsString", "StringToHashBucketFast", "NotEqual", "Where", "GatherNd", "SparseReshape",
    "GreaterEqual", "GatherV2", "SparseFillEmptyRows", "Unique", "ResourceGather",
    "SparseSegmentMean", "SparseSegmentSum", "SparseSegmentSqrtN", "Tile", "ZerosLike", "Select",
}


@pytest.fixture(scope="module")
def model():
    fn, _ = dense_features_function()
    return fn


@pytest.fixture(scope="module", params=["native", "numpy"])
def optimized(request, model):
    return request.param, tf_blade.optimize(model, bridge=request.param)


def assert_same(expected, got):
    np.testing.assert_array_equal(np.asarray(expected), np.asarray(got))


def test_structure_one_fused_op_no_feature_column_ops_left(optimized):
    bridge, opt = optimized
    counts = op_counts(opt.signatures["serving_default"])
    fused = "BladeFusedCall" if bridge == "native" else "PyFuncStateless"
    assert counts[fused] == 1
    assert not FEATURE_COLUMN_OPS & set(counts), counts
    assert opt.report.fused_ops == 1
    assert opt.report.functions["serving_default"]["tf_ops_after"] <= len(COLUMNS) + 2


@pytest.mark.parametrize("batch", [0, 1, 7, 64, 513])
def test_matches_tensorflow_bit_exact(optimized, model, rng, batch):
    _, opt = optimized
    x = random_batch(batch, rng, huge=True)
    assert_same(model(x), opt.signatures["serving_default"](*flat_inputs(x)))


def test_all_rows_empty_and_all_duplicates(optimized, model, rng):
    _, opt = optimized
    for x in (random_batch(9, rng, empty_fraction=1.0), random_batch(9, rng, max_ids=1)):
        assert_same(model(x), opt.signatures["serving_default"](*flat_inputs(x)))


def test_one_compile_serves_every_batch_size(model, rng):
    opt = tf_blade.optimize(model, bridge="native")
    before = compiler.compile_count
    for batch in (0, 1, 7, 512, 4096):
        x = random_batch(batch, rng)
        assert_same(model(x), opt.signatures["serving_default"](*flat_inputs(x)))
    assert compiler.compile_count - before <= 1  # 0 when an earlier test compiled this spec


def test_numpy_bridge_equals_native(model, rng):
    native = tf_blade.optimize(model, bridge="native").signatures["serving_default"]
    numpy = tf_blade.optimize(model, bridge="numpy").signatures["serving_default"]
    x = random_batch(100, rng, huge=True)
    assert_same(native(*flat_inputs(x)), numpy(*flat_inputs(x)))


def test_bad_sparse_input_raises_invalid_argument(optimized, model):
    bridge, opt = optimized
    x = random_batch(4, np.random.default_rng(1))
    name = COLUMNS[0][0]
    st = x[name]
    bad = tf.SparseTensor(tf.constant([[7, 0]], tf.int64), st.values[:1] if st.values.shape[0] else tf.constant(["a"]),
                          tf.constant([4, 1], tf.int64))  # row 7 outside a batch of 4
    x[name] = bad
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        model(x)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        opt.signatures["serving_default"](*flat_inputs(x))
    # numpy_function reports the kernel's ValueError as InvalidArgument, its class name first
    prefix = "ValueError: " if bridge == "numpy" else ""
    assert error_core(ours.value.message) == prefix + error_core(theirs.value.message)


def test_disable_runs_the_original_graph(model, monkeypatch):
    monkeypatch.setenv("TF_BLADE_DISABLE", "1")
    opt = tf_blade.optimize(model)
    assert opt.report.fused_ops == 0
    assert "BladeFusedCall" not in op_counts(opt.signatures["serving_default"])


def test_training_graph_is_left_alone():
    import tf_keras
    from conftest import feature_columns, input_specs
    layer = tf_keras.layers.DenseFeatures(feature_columns())

    @tf.function(input_signature=[input_specs()])
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x))
        return tape.gradient(loss, layer.trainable_variables)

    opt = tf_blade.optimize(train_step)
    entry = opt.report.functions["serving_default"]
    assert "training graph" in entry["left_alone"]
    assert opt.report.fused_ops == 0


def test_min_cluster_size_and_deny_list(model):
    assert tf_blade.optimize(model, min_cluster_size=10**6).report.fused_ops == 0
    denied = optimize_uncompiled(model, deny_ops={"Unique"}, bridge="numpy")
    counts = op_counts(denied.signatures["serving_default"])
    assert counts["Unique"] == len(COLUMNS)
    assert counts["PyFuncStateless"] >= 1


def test_v1_input_layer(rng):
    from conftest import feature_columns, input_specs
    import tf_keras  # noqa: F401  (input_layer's variables come from the v1 variable scope)

    wrapped = tf.compat.v1.wrap_function(
        lambda x: tf.compat.v1.feature_column.input_layer(x, feature_columns()), [input_specs()])
    opt = tf_blade.optimize(wrapped, bridge="native")
    assert opt.report.fused_ops == 1
    x = random_batch(50, rng, huge=True)
    n_user = len(wrapped.inputs) - len(wrapped.captured_inputs)
    reference = wrapped.prune(wrapped.inputs[:n_user], wrapped.outputs)  # callable with flat tensors
    assert_same(reference(*flat_inputs(x))[0], opt.signatures["serving_default"](*flat_inputs(x)))


def test_no_compiler_falls_back_to_numpy_function(tmp_path):
    """With no C++ compiler (and no prebuilt op), optimize() still works through numpy_function."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent("""
        import numpy as np, tensorflow as tf
        import tf_blade
        from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
        m = criteo_feature_model(2, dim=4)
        opt = tf_blade.optimize(m.serve)
        x = synthetic_batch(9, 2)
        args = [tf.constant(x[c]) for c in column_names(2)]
        np.testing.assert_array_equal(m.serve(*args)["features"], opt.signatures["serving_default"](*args)["features"])
        print("BRIDGE", opt.report.bridge)
    """)
    env = dict(__import__("os").environ, TF_BLADE_CACHE_DIR=str(tmp_path), CXX="/bin/false")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert "BRIDGE numpy" in result.stdout, result.stderr[-3000:]

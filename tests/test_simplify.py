"""The simplify pass (passes/simplify.py): Grappler's folding and deduplication run before
clustering, so fused kernels compute what TF's runtime computes, from fewer ops."""
import numpy as np
import tensorflow as tf

import tf_blade
from conftest import assert_matches_tf, op_counts

_SPEC = [tf.TensorSpec([None], tf.float32)]


def _bits_equal(got, want):
    assert_matches_tf(got.numpy(), None, want.numpy(), None)


def test_division_by_a_constant_rounds_as_tf_does_and_by_a_capture_as_tf_does(rng):
    # TF's runtime folds x / c into x * (1 / c) when c is a constant of the graph, and divides
    # when c is a captured tensor (the runtime passes it as an argument): one ulp apart, often.
    captured = tf.constant(np.float32(912030.75))
    in_graph = tf.function(lambda x: (x - 3.0) / tf.maximum(tf.constant(np.float32(954.0)), 1e-7), input_signature=_SPEC)
    by_capture = tf.function(lambda x: (x - 3.0) / tf.maximum(captured, 1e-7), input_signature=_SPEC)
    x = tf.constant((rng.standard_normal(10000) * 1e3).astype(np.float32))
    for f, d in ((in_graph, np.float32(954.0)), (by_capture, np.float32(912030.75))):
        opt = tf_blade.optimize(f, bridge="native")
        assert opt.report.fused_ops == 1, opt.report
        quotient, product = (x.numpy() - 3) / d, (x.numpy() - 3) * (np.float32(1) / d)
        assert (quotient != product).any()  # else this test could not tell the two apart
        _bits_equal(opt.signatures["serving_default"](x), f(x))


def test_division_by_a_capture_in_a_saved_model_rounds_as_tf_does(tmp_path, rng):
    # Loaded from a SavedModel, a capture is a placeholder bound at the call: never folded either.
    captured = tf.constant(np.float32(912030.75))
    module = tf.Module()
    module.f = tf.function(lambda x: (x - 3.0) / captured + (x - 3.0) / tf.constant(np.float32(954.0)), input_signature=_SPEC)
    tf.saved_model.save(module, str(tmp_path / "model"), signatures={"serving_default": module.f})
    opt = tf_blade.optimize(str(tmp_path / "model"), str(tmp_path / "optimized"))
    assert opt.report.fused_ops == 1, opt.report
    x = tf.constant((rng.standard_normal(10000) * 1e3).astype(np.float32))
    want = tf.saved_model.load(str(tmp_path / "model")).signatures["serving_default"](x=x)["output_0"]
    _bits_equal(opt.signatures["serving_default"](x=x)["output_0"], want)
    _bits_equal(tf.saved_model.load(str(tmp_path / "optimized")).signatures["serving_default"](x=x)["output_0"], want)


def test_a_duplicated_subgraph_is_fused_once():
    def body(x):
        hashed = [tf.strings.to_hash_bucket_fast(x, 97) for _ in range(3)]  # three identical chains
        return hashed[0] + hashed[1] * 2 + hashed[2] * 3

    f = tf.function(body, input_signature=[tf.TensorSpec([None], tf.string)])
    opt = tf_blade.optimize(f, bridge="native")
    report = opt.report.functions["serving_default"]
    (cluster,) = report["clusters"]
    assert cluster["op_types"].get("StringToHashBucketFast") == 1, cluster
    x = tf.constant(["a", "", "\u00e9", "id_7", "a"] * 7)
    np.testing.assert_array_equal(opt.signatures["serving_default"](x), f(x))


def test_a_computation_on_constants_folds_away(rng):
    # Tracing leaves the Prod of a constant in the graph; Grappler folds it, so nothing of it is
    # compiled and nothing of it is left for TF.
    f = tf.function(lambda x: tf.reshape(x, [-1, tf.reduce_prod(tf.constant([1, 3]))]) * 2.0 + 1.0,
                    input_signature=[tf.TensorSpec([None], tf.float32)])
    assert "Prod" in op_counts(f.get_concrete_function())
    opt = tf_blade.optimize(f, bridge="native")
    (cluster,) = opt.report.functions["serving_default"]["clusters"]
    assert "Prod" not in cluster["op_types"] and "Prod" not in op_counts(opt.signatures["serving_default"]), cluster
    x = tf.constant(rng.standard_normal(12).astype(np.float32))
    _bits_equal(opt.signatures["serving_default"](x), f(x))


def test_a_string_compared_with_the_constant_first_fuses():
    f = tf.function(lambda x: tf.cast(tf.not_equal("", x), tf.int32) + tf.cast(tf.equal("a", x), tf.int32),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1 and not {"Equal", "NotEqual"} & set(op_counts(opt.signatures["serving_default"])), opt.report
    x = tf.constant(["a", "", "b", "aa", "\u00e9", ""])
    np.testing.assert_array_equal(opt.signatures["serving_default"](x), f(x))


def test_stateful_ops_whose_outputs_are_unused_still_run():
    calls = tf.Variable(0, dtype=tf.int64)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def f(x):
        calls.assign_add(1)  # nothing reads it: only automatic control dependencies keep it
        return (x + 1) * 3

    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    x = tf.constant([1, 2, 3], tf.int64)
    np.testing.assert_array_equal(opt.signatures["serving_default"](x), f(x))
    opt.signatures["serving_default"](x)
    assert int(calls.numpy()) == 3


def test_a_float_plus_zero_keeps_minus_zero_as_tfs_runtime_does():
    # Grappler's constant folding rewrites x + 0 as x (on either side; x keeps its shape), so TF
    # gives -0.0 + 0.0 = -0.0 where IEEE gives 0.0; a zero that broadcasts x is still added
    f = tf.function(lambda x: {"a": tf.minimum(x, 1.0) + 0.0, "b": 0.0 + x * 2.0, "c": x - 0.0,
                               "d": x[:, None] + tf.zeros([1, 2])}, input_signature=_SPEC)
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    x = tf.constant(np.array([-0.0, 0.0, -1.0, 1.0, -0.0, np.inf, -np.inf, np.nan], np.float32))
    want, got = f(x), opt.signatures["serving_default"](x)
    assert np.signbit(want["a"].numpy()[0])  # else this test could not tell the two apart
    for k in want:
        assert got[k].numpy().tobytes() == want[k].numpy().tobytes(), k

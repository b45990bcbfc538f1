"""A ragged tf.where (Keras Hashing(mask_value=...) on a RaggedTensor) fuses into one op: Cumsum,
RaggedRange, BroadcastArgs and BroadcastTo lower, Ranges over constants fold, relay NoOps stop
splitting clusters, and a cluster's long chains compile as several parts. Results and errors as TF's."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import tf_blade
from tf_blade.graph.ir import from_graphdef
from tf_blade.passes.constant_control_edges import bypass_relay_noops
from tf_blade.passes.fold_ranges import fold_ranges
from conftest import error_core

R = tf.raw_ops


def test_keras_hashing_with_a_mask_on_ragged_strings_is_one_op():
    hashing = tf_keras.layers.Hashing(num_bins=7, mask_value="")

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.string, 1, tf.int64)])
    def f(r):
        hashed = hashing(r)
        return {"ids": hashed.flat_values, "splits": hashed.row_splits}

    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    not_fused = str(opt.report)
    for op in ("Cumsum", "RaggedRange", "BroadcastArgs", "BroadcastTo", "All", "Range"):
        assert f"x {op}:" not in not_fused, not_fused
    fused = opt.signatures["serving_default"]
    rng = np.random.default_rng(0)
    pool = np.array([b"", b"a", b"bb", "\u00e9".encode(), b"x" * 40], dtype=object)
    for rows in ([], [[]], [[b""]], [[b"", b""], [], [b"a"]]) + tuple(
            [list(rng.choice(pool, size=rng.integers(0, 5))) for _ in range(n)] for n in (1, 9, 200)):
        r = tf.RaggedTensor.from_row_lengths(tf.constant([s for row in rows for s in row], tf.string),
                                             tf.constant([len(row) for row in rows], tf.int64))
        want = f(r)
        got = fused(*tf.nest.flatten(r, expand_composites=True))
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x"), tf.TensorSpec([], tf.int32, name="axis"),
                              tf.TensorSpec([None], tf.int64, name="starts"), tf.TensorSpec([None], tf.int64, name="limits"),
                              tf.TensorSpec([], tf.int64, name="delta"), tf.TensorSpec([2], tf.int64, name="shape")])
def glue(x, axis, starts, limits, delta, shape):
    ranges = R.RaggedRange(starts=starts, limits=limits, deltas=delta, Tsplits=tf.int32)
    wide = R.BroadcastArgs(s0=R.Shape(input=x, out_type=tf.int64), s1=shape)
    return {"exclusive": R.Cumsum(x=x, axis=axis, exclusive=True), "reverse": R.Cumsum(x=x * 3.0, axis=axis, reverse=True),
            "splits": ranges.rt_nested_splits, "values": ranges.rt_dense_values * 2,
            "wide": wide + 0, "broadcast": R.BroadcastTo(input=x + 1.0, shape=wide)}


@pytest.fixture(scope="module")
def fused_glue():
    opt = tf_blade.optimize(glue, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    return opt.signatures["serving_default"]


@pytest.mark.parametrize("case", ["ok", "axis", "delta", "lengths", "incompatible", "unbroadcastable"])
def test_glue_ops_fused_match_tf_and_its_errors(fused_glue, case):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    args = {"x": x, "axis": np.int32(-1), "starts": np.array([0, 5, 2]), "limits": np.array([3, 1, 9]),
            "delta": np.int64(2), "shape": np.array([1, 3])}
    args.update({"ok": {}, "axis": {"axis": np.int32(2)}, "delta": {"delta": np.int64(0)},
                 "lengths": {"limits": np.array([3, 4])}, "incompatible": {"shape": np.array([4, 3])},
                 "unbroadcastable": {"x": np.zeros((0, 3), np.float32), "shape": np.array([1, 1])}}[case])
    args = {k: tf.constant(v) for k, v in args.items()}
    try:
        want = glue(**args)
    except tf.errors.InvalidArgumentError as e:
        with pytest.raises(tf.errors.InvalidArgumentError) as got:
            fused_glue(**args)
        assert error_core(got.value.message) == error_core(e.message)
        return
    got = fused_glue(**args)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])


def test_ranges_over_constants_fold():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.bool), tf.TensorSpec([], tf.int32)])
    def f(x, n):
        ok = R.All(input=x, axis=tf.range(0, 2))  # Range(Const, Const, Const)
        runtime = tf.range(0, n)
        floats = tf.range(0.0, 3.0, 1.0)
        return ok, runtime, floats

    graph = from_graphdef(f.get_concrete_function().graph.as_graph_def())
    assert fold_ranges(graph) == 1
    assert sorted(n.op for n in graph.nodes.values() if n.op == "Range") == ["Range", "Range"]


def test_relay_noops_are_bypassed_and_gathering_ones_kept():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def f(x):
        check = tf.debugging.assert_non_negative(x)
        with tf.control_dependencies([check]):
            relay = tf.no_op()
        with tf.control_dependencies([relay]):
            y = tf.identity(x)
        with tf.control_dependencies([tf.identity(x), tf.identity(y)]):
            gather = tf.no_op()
        with tf.control_dependencies([gather]):
            z = tf.identity(y)
        return z

    graph = from_graphdef(f.get_concrete_function().graph.as_graph_def())
    noops = {n.name: n for n in graph.nodes.values() if n.op == "NoOp"}
    relay = next(name for name, n in noops.items() if len(n.control_inputs) == 1)
    gather = next(name for name, n in noops.items() if len(n.control_inputs) == 2)
    source = noops[relay].control_inputs[0]
    assert bypass_relay_noops(graph) >= 1
    waiting = [n for n in graph.nodes.values() if relay in n.control_inputs]
    assert not waiting
    assert any(source in n.control_inputs and n.op == "Identity" for n in graph.nodes.values())
    assert any(gather in n.control_inputs for n in graph.nodes.values())

"""passes/unguard_asserts.py and the Assert lowering: tf.debugging asserts inside a fused cluster
pass when TF's pass and fail with TF's "assertion failed" text when TF's fail; an assert on floats
stays a TF Assert (unguarded, same behaviour) and a real tf.cond stays an If. A fused op holding
an assert is stateful: Grappler prunes stateless ops whose outputs nobody reads, and here none
are (the assert only orders the outputs through control edges)."""
import re

import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts


@tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.float32)])
def checked(ids, weights):
    with tf.control_dependencies([tf.debugging.assert_less(ids, tf.constant(10, tf.int64), message="id too big",
                                                           summarize=2),
                                  tf.debugging.assert_non_negative(weights)]):
        doubled = tf.identity(ids * 2)
    picked = tf.cond(tf.size(ids) > 2, lambda: weights * 2.0, lambda: weights)  # stays an If
    return {"doubled": doubled + 1, "picked": picked}


@pytest.fixture(scope="module", params=["native", "numpy"])
def fused(request):
    return request.param, tf_blade.optimize(checked, bridge=request.param, min_cluster_size=1).signatures["serving_default"]


def test_int_assert_fuses_float_assert_and_cond_stay(fused):
    bridge, fn = fused
    counts = op_counts(fn)
    assert counts["BladeFusedCallStateful" if bridge == "native" else "PyFunc"] == 1, counts  # the int assert
    assert counts["Assert"] == 1, counts                                                       # the float one, in TF
    assert counts["If"] + counts["StatelessIf"] == 1, counts                  # the tf.cond


@pytest.mark.parametrize("ids,weights", [([1, 2, 3], [0.5, 1.0, 2.0]), ([], []), ([9, 0, 12, 11], [1, 1, 1, 1]),
                                         ([3], [-1.0])])
def test_asserts_behave_as_in_tf(fused, ids, weights):
    _, fused = fused
    args = tf.constant(np.array(ids, np.int64)), tf.constant(np.array(weights, np.float32))
    outcomes = []
    for call in (lambda: checked(*args), lambda: fused(*args)):
        try:
            out = call()
            outcomes.append((out["doubled"].numpy().tolist(), out["picked"].numpy().tolist()))
        except tf.errors.InvalidArgumentError as e:
            outcomes.append(re.search(r"assertion failed: [^\n]*", e.message).group(0))
    assert outcomes[0] == outcomes[1]


_FALLBACK = """
import numpy as np, tensorflow as tf
import tf_blade
from tf_blade.runtime import bridge
@tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.float32)])
def checked(ids, weights):  # as above: the int assert's cluster has no output at all
    with tf.control_dependencies([tf.debugging.assert_less(ids, tf.constant(10, tf.int64)),
                                  tf.debugging.assert_non_negative(weights)]):
        doubled = tf.identity(ids * 2)
    return {"out": doubled + 1, "picked": tf.cond(tf.size(ids) > 2, lambda: weights * 2.0, lambda: weights)}
fused = tf_blade.optimize(checked, bridge="native", min_cluster_size=1).signatures["serving_default"]
native = bridge.native_bridge()
def compile_fails(spec, dtypes, ranks):
    raise RuntimeError("injected")
native.set_compile_callback(compile_fails)  # every fused op runs its original ops
print("OK", fused(tf.constant([1, 2], tf.int64), tf.constant([1.0, 1.0]))["out"].numpy().tolist())
try:
    fused(tf.constant([1, 12], tf.int64), tf.constant([1.0, 1.0]))
    print("NOT RAISED")
except tf.errors.InvalidArgumentError as e:
    print("RAISED", "assertion failed" in e.message, native.fallback_count() > 0)
"""


def test_the_fallback_of_an_assert_cluster_still_asserts():
    """The original ops of a cluster holding an Assert (no output) keep it as a control output."""
    import os
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert "OK [3, 5]" in result.stdout and "RAISED True True" in result.stdout, result.stdout + result.stderr[-3000:]


def _guarded(check):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None, 4], tf.float32)])
    def guarded(ids, table):
        # The gather rejects the ids the assert does; TF runs the assert first (control edge). Both
        # read one computed value, so they land in one part, where only the edge orders them.
        x = ids + 0
        with tf.control_dependencies([tf.debugging.assert_less(check(x), tf.constant(4, tf.int64), message="id too big")]):
            rows = tf.gather(table, x)
        return rows * 2.0
    return guarded


@pytest.mark.parametrize("bridge", ["native", "numpy"])
@pytest.mark.parametrize("check", [lambda x: x, lambda x: x * 1, lambda x: x - 0, lambda x: tf.abs(x)],
                         ids=["x", "mul", "sub", "abs"])
def test_an_assert_fails_before_the_ops_it_guards(bridge, check):
    guarded = _guarded(check)
    fused = tf_blade.optimize(guarded, bridge=bridge, min_cluster_size=1).signatures["serving_default"]
    assert "Assert" not in op_counts(fused) and "GatherV2" not in op_counts(fused)
    args = tf.constant([1, 7], tf.int64), tf.ones([4, 4])
    for fn in (guarded, fused):
        with pytest.raises(tf.errors.InvalidArgumentError, match="assertion failed: \\[id too big\\]"):
            fn(*args)
    ok = tf.constant([3, 0], tf.int64), tf.ones([4, 4])
    np.testing.assert_array_equal(fused(*ok).numpy(), guarded(*ok).numpy())


def test_asserts_differing_only_in_their_messages_share_a_template_and_say_their_own():
    """An Assert's string constants (tf.debugging quotes tensor names: "x (hashing/stack_1:0) = ")
    are parameters of its part, not text of the template: two checks that differ only in their
    messages compile once, and each still fails with its own message, as TF's does."""
    import json

    from conftest import error_core, running_nodes
    from tf_blade.codegen.generate import generate

    def build(first, second):
        def f(a, b):
            with tf.control_dependencies([tf.debugging.assert_non_negative(a, message=first),
                                          tf.debugging.assert_non_negative(b, message=second)]):
                return {"a": tf.identity(a * 2) + 1, "b": tf.identity(b * 3) + 1}
        return tf.function(f, input_signature=[tf.TensorSpec([None], tf.int64)] * 2)

    templates = []
    for first, second in (("first ids", "second ids"), ("others", "caf\u00e9 ids")):
        f = build(first, second)
        fused = tf_blade.optimize(f, bridge="native", min_cluster_size=1).signatures["serving_default"]
        (node,) = [n for n in running_nodes(fused.graph.as_graph_def()) if n.op.startswith("BladeFusedCall")]
        _, parts = generate(json.loads(node.attr["cluster"].s.decode()))
        assert not any(first in text or "ids" in text for text in parts.values())
        templates.append(set(parts))
        good, bad = tf.constant([0, 5], tf.int64), tf.constant([4, -1], tf.int64)
        want, got = f(good, good), fused(good, good)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
        for a, b, says in ((bad, good, first), (good, bad, second)):
            with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
                f(a, b)
            with pytest.raises(tf.errors.InvalidArgumentError) as ours:
                fused(a, b)
            assert error_core(ours.value.message) == error_core(theirs.value.message).replace("\u00e9", "?")
            assert says.replace("\u00e9", "?") in error_core(ours.value.message)
    assert templates[0] == templates[1]

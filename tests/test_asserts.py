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

"""AsString on integers and booleans (kernels/as_string.py) against TF: every width and printf
flag TF's fill can give, every integer dtype, the int64 extremes, widths past a tstring's inline
capacity; and fused into a cluster, where the strings feed a hash."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import decode_tstrings, op_counts
from tf_blade.kernels.as_string import FLAGS, as_string_bools, as_string_ints
from tf_blade.kernels.errors import new_error_buffer

EXTREMES = {np.int8: [-128, 127], np.int16: [-32768, 32767], np.int32: [-2**31, 2**31 - 1],
            np.int64: [-2**63, 2**63 - 1]}


def _values(rng, dtype):
    info = np.iinfo(dtype)
    mags = 10 ** rng.integers(0, len(str(info.max)), 40).astype(np.float64)
    v = (rng.random(40) * mags).astype(np.int64) * rng.choice([-1, 1], 40)
    return np.concatenate([EXTREMES[dtype], [0, 1, -1], np.clip(v, info.min, info.max)]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("width", [-1, 0, 3, 22, 23])
@pytest.mark.parametrize("fill", sorted(FLAGS))
def test_integers_format_as_tf(rng, dtype, width, fill):
    values = _values(rng, dtype)
    want = tf.strings.as_string(tf.constant(values), width=width, fill=fill).numpy().tolist()
    err = new_error_buffer()
    buf = as_string_ints(values, width, FLAGS[fill], err)
    assert err[0] == 0
    assert decode_tstrings(buf, len(values)) == want


def test_booleans_and_empty_inputs():
    values = np.array([True, False, True])
    want = tf.strings.as_string(tf.constant(values), width=9).numpy().tolist()
    assert decode_tstrings(as_string_bools(values, new_error_buffer()), 3) == want
    assert as_string_ints(np.zeros(0, np.int64), 5, 0, new_error_buffer()).shape == (0,)


@pytest.mark.parametrize("dtype,width,fill", [(tf.int64, 25, "0"), (tf.int32, 4, "-"), (tf.int16, -1, ""),
                                              (tf.int64, 3, "+"), (tf.int32, -1, " "), (tf.bool, -1, "")])
def test_fused_as_string_matches_tf(rng, dtype, width, fill):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], dtype)])
    def hashed(x):  # the strings stay inside the fused op: a 2**62-bucket hash shows their bytes
        return tf.strings.to_hash_bucket_fast(tf.strings.as_string(x, width=width, fill=fill), 2**62)

    fused = tf_blade.optimize(hashed, min_cluster_size=1).signatures["serving_default"]
    assert "AsString" not in op_counts(fused) and op_counts(fused)["BladeFusedCall"] == 1
    for n in (0, 1, 17):
        if dtype == tf.bool:
            x = tf.constant(rng.random((n, 3)) < 0.5)
        else:
            x = tf.constant(rng.integers(-10**4, 10**4, (n, 3)), dtype)
        np.testing.assert_array_equal(fused(x).numpy(), hashed(x).numpy())


def test_unsupported_formats_stay_in_tf():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.float32)])
    def f(i, x):
        a = tf.strings.to_hash_bucket_fast(tf.strings.as_string(i, width=4, fill="x"), 10)
        b = tf.strings.to_hash_bucket_fast(tf.strings.as_string(x), 10)
        return a + b

    counts = op_counts(tf_blade.optimize(f, min_cluster_size=1).signatures["serving_default"])
    assert counts["AsString"] == 2, counts

"""kernels/fill.py and kernels/range_op.py against tf.raw_ops.Fill / Range: values, sizes and
TF's errors (negative or overflowing dims, a non-scalar value, zero delta, wrong direction)."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import run_kernel, run_tf
from tf_blade.kernels.fill import checked_dims, scalar_value
from tf_blade.kernels.range_op import range_values


@pytest.mark.parametrize("dims", [[2, 3], [0, 5], [], [2, -1], [2**62, 4], [-3]])
def test_fill_dims(dims):
    want, tf_err = run_tf("Fill", dims=tf.constant(dims, tf.int64), value=tf.constant(1.5))
    got, k_err = run_kernel(checked_dims, np.array(dims, np.int64))
    if tf_err:
        assert k_err and k_err in tf_err, (k_err, tf_err)
    else:
        assert k_err is None and tuple(got) == want.shape


def test_fill_value_must_be_scalar():
    _, tf_err = run_tf("Fill", dims=tf.constant([2]), value=tf.constant([1.0, 2.0]))
    _, k_err = run_kernel(scalar_value, np.array([1.0, 2.0]), 1)
    assert k_err and k_err in tf_err
    assert run_kernel(scalar_value, np.array([4.0]), 1) == (4.0, None)  # legacy [1]-shaped value


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_range_random(rng, dtype):
    for _ in range(40):
        start, limit = (rng.integers(-20, 20, 2) * (1 if dtype in (np.int32, np.int64) else 0.37)).astype(dtype)
        delta = dtype(rng.choice([-3, -1, 1, 2, 0.7, 0]) if dtype in (np.float32, np.float64) else rng.choice([-3, -1, 1, 2, 0]))
        want, tf_err = run_tf("Range", start=tf.constant(start), limit=tf.constant(limit), delta=tf.constant(delta))
        got, k_err = run_kernel(range_values, np.array([start]), np.array([limit]), np.array([delta]),
                                dtype in (np.float32, np.float64))
        if tf_err:
            assert k_err and k_err in tf_err, (k_err, tf_err)
        else:
            assert k_err is None and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


_I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("start, limit, delta", [
    (_I64.min, _I64.max, _I64.max), (_I64.max, _I64.min, _I64.min), (-5, _I64.max, _I64.max // 2),
    (_I64.min + 3, 4, _I64.max), (_I64.min, _I64.max, 1 << 61), (10, 0, _I64.min),
    (int(5e18), int(-5e18), -1), (_I64.min, _I64.max, 2), (0, 10, _I64.min), (7, 7, _I64.min)])
def test_range_int64_spans_past_int64(start, limit, delta):
    """limit - start and abs(delta) past int64 (fuzz round 4: the size wrapped, giving a wrong
    length or an allocation failure)."""
    want, tf_err = run_tf("Range", start=tf.constant(start, tf.int64), limit=tf.constant(limit, tf.int64),
                          delta=tf.constant(delta, tf.int64))
    got, k_err = run_kernel(range_values, np.array([start], np.int64), np.array([limit], np.int64),
                            np.array([delta], np.int64), False)
    if tf_err:
        assert k_err and k_err in tf_err, (k_err, tf_err)
    else:
        assert k_err is None
        np.testing.assert_array_equal(got, want)

"""kernels/reduce.py row reductions against tf.raw_ops Sum/Prod/Max/Min/Mean/Any/All over the
last axis: integers bit-exact (wrap-around included), floats within 1e-6 relative (row-order sum
against Eigen's tree), NaN propagation, empty rows."""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels import reduce as k

F32_EPS = dict(rtol=1e-6, atol=1e-6)


def tf_reduce(op, x):
    fn = getattr(tf.raw_ops, op)
    return fn(input=tf.constant(x), axis=tf.constant([1])).numpy()


def kernel_reduce(op, x):
    if op in ("Max", "Min"):
        if x.dtype.kind == "f":
            bound = x.dtype.type(-np.inf if op == "Max" else np.inf)
        else:
            info = np.iinfo(x.dtype)
            bound = x.dtype.type(info.min if op == "Max" else info.max)
        return getattr(k, f"reduce_{op.lower()}")(x, bound)
    if op == "Mean":
        return k.reduce_mean(x, x.dtype.kind == "f")
    return getattr(k, f"reduce_{op.lower()}")(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("op", ["Sum", "Prod", "Max", "Min", "Mean"])
def test_numeric_reductions(rng, op, dtype):
    for _ in range(15):
        rows, n = (int(v) for v in rng.integers(0, 7, 2))
        if dtype in (np.float32, np.float64):
            x = rng.standard_normal((rows, n)).astype(dtype) * 3
            if x.size and rng.random() < 0.3:
                x.flat[rng.integers(0, x.size)] = rng.choice([np.nan, np.inf, -np.inf])
        else:
            info = np.iinfo(dtype)
            x = rng.integers(-50, 50, (rows, n)).astype(dtype)
            if x.size and rng.random() < 0.5:
                x.flat[rng.integers(0, x.size)] = rng.choice([info.min, info.max])
        want, got = tf_reduce(op, x), kernel_reduce(op, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        if x.dtype.kind == "f":
            np.testing.assert_allclose(got, want, **F32_EPS)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["Any", "All"])
def test_logical_reductions(rng, op):
    for _ in range(20):
        x = rng.random((int(rng.integers(0, 5)), int(rng.integers(0, 5)))) < 0.5
        np.testing.assert_array_equal(kernel_reduce(op, x), tf_reduce(op, x))


def test_long_float_sum_stays_within_tolerance(rng):
    # Summation error scales with the terms, not the result (a sum near 0 has cancelled): within
    # 1e-6 of sum(|x|). TF adds in vectorised blocks, the kernel in sequence; an absolute bound
    # of 1e-4 failed on a random draw (1.9e-4 off on a sum of -4.35 over 5000 terms).
    x = rng.standard_normal((4, 5000)).astype(np.float32)
    scale = np.abs(x).astype(np.float64).sum(axis=1)
    assert np.all(np.abs(kernel_reduce("Sum", x) - tf_reduce("Sum", x)) <= 1e-6 * scale)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Prod"])
def test_signed_zeros_as_tf_keeps_them(op):
    # TF copies over a size-1 axis (-0.0 stays) and adds from +0.0 otherwise (-0.0 + -0.0 -> 0.0)
    for n in (1, 2, 3):
        x = np.full((2, n), -0.0, np.float32)
        want, got = tf_reduce(op, x), kernel_reduce(op, x)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

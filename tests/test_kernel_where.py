"""kernels/where.py against tf.raw_ops.Where (one input), on fresh random inputs every run."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

from tf_blade.kernels.where import where

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]


def tf_where(x):
    # tf.constant keeps the NumPy dtype (a bare array given to raw_ops may be cast to a default).
    return tf.raw_ops.Where(condition=tf.constant(x)).numpy()


def check(x):
    got = where(x, x.ndim)
    want = tf_where(x)
    assert got.dtype == want.dtype == np.int64
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def random_array(rng, shape, dtype, density):
    mask = rng.random(shape) < density
    if dtype == np.bool_:
        return mask
    if np.issubdtype(dtype, np.floating):
        # Non-zero values include NaN and infinities (true); -0.0 counts as zero (false).
        # Subnormals are left to test_where_subnormals_under_tf_fp_mode.
        pool = np.array([1.5, -2.0, np.nan, np.inf, -np.inf, 1e-30, -3e-38], np.float64).astype(dtype)
        vals = pool[rng.integers(0, len(pool), size=shape)]
        zeros = np.where(rng.random(shape) < 0.5, -0.0, 0.0).astype(dtype)
        return np.where(mask, vals, zeros).astype(dtype)
    info = np.iinfo(dtype)
    vals = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    vals[vals == 0] = 1
    return np.where(mask, vals, 0).astype(dtype)


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=4),
       dtype=st.sampled_from(DTYPES),
       density=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
       seed=st.integers(0, 2**32 - 1))
def test_where_random(shape, dtype, density, seed):
    check(random_array(np.random.default_rng(seed), tuple(shape), dtype, density))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_larger_random(rng, dtype):
    for rank in (1, 2, 3, 5):
        shape = tuple(int(d) for d in rng.integers(1, 12, size=rank))
        check(random_array(rng, shape, dtype, rng.random()))


def test_where_non_contiguous_views(rng):
    x = random_array(rng, (7, 9, 4), np.float32, 0.4)
    for view in (x.transpose(2, 0, 1), x[::2, 1::3], x[:, ::-1, :], x[..., 1]):
        assert not view.flags.c_contiguous or view.ndim < 3
        got = where(view, view.ndim)
        np.testing.assert_array_equal(got, tf_where(np.ascontiguousarray(view)))


def test_where_special_floats():
    x = np.array([[0.0, -0.0, np.nan], [np.inf, -np.inf, 1e-30]], np.float64)
    check(x)
    check(x.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_subnormals_under_tf_fp_mode(dtype):
    # TF runs graph kernels with denormals flushed to zero, so Where treats a subnormal as zero.
    # A fused kernel runs on that same TF thread; run ours there too (a graph-mode
    # numpy_function) and it must agree. (Run bare in Python, a subnormal counts as non-zero.)
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([[tiny, 0.0, -tiny], [1.0, -tiny * 3, np.finfo(dtype).tiny]], dtype)
    run = tf.function(lambda a: tf.numpy_function(lambda v: where(v, v.ndim), [a], tf.int64))
    got = run(tf.constant(x)).numpy()
    np.testing.assert_array_equal(got, tf_where(x))
    assert got.shape[0] == 2  # only 1.0 and the smallest normal survive the flush


@pytest.mark.parametrize("shape", [(0,), (0, 2**40), (2**40, 0, 3), (3, 0), (1, 2**31, 0)])
def test_where_large_empty_tensors(shape):
    # TF advisories: Where on large empty tensors (int32 overflow in the output size / shape math).
    x = np.zeros(shape, np.bool_)
    check(x)
    check(np.zeros(shape, np.float32))


def test_where_all_true_many_elements(rng):
    x = rng.random((300, 301)) < 0.97
    check(x)

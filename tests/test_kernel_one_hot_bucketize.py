"""kernels/one_hot.py and kernels/bucketize.py against tf.raw_ops.OneHot / Bucketize: random ids
(negative and out of range too), every axis, NaN/inf and integer inputs beyond float32's exact
range for Bucketize, and the bad inputs TF rejects, with TF's own message."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, run_kernel, run_tf
from tf_blade.kernels.bucketize import COUNT_MAX, bucketize
from tf_blade.kernels.one_hot import one_hot


def check_one_hot(indices, depth, axis, on=1.5, off=-0.5):
    want, tf_err = run_tf("OneHot", indices=tf.constant(indices), depth=tf.constant(depth, tf.int32),
                          on_value=tf.constant(on, tf.float32), off_value=tf.constant(off, tf.float32), axis=axis)
    rank = indices.ndim
    ax = rank if axis == -1 else axis
    view = np.ascontiguousarray(indices).reshape(int(np.prod(indices.shape[:ax])), int(np.prod(indices.shape[ax:])))
    got, k_err = run_kernel(one_hot, view, np.array([depth], np.int32), np.array([on], np.float32),
                            np.array([off], np.float32))
    if got is not None:
        got = got.reshape(indices.shape[:ax] + (got.shape[1],) + indices.shape[ax:])
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_one_hot_random(rng, dtype):
    for _ in range(30):
        shape = tuple(int(d) for d in rng.integers(0, 4, int(rng.integers(0, 4))))
        indices = rng.integers(-2 if dtype != np.uint8 else 0, 7, shape).astype(dtype)
        check_one_hot(indices, int(rng.integers(0, 6)), int(rng.integers(-1, len(shape) + 1)))


def test_one_hot_negative_depth():
    check_one_hot(np.array([1, 2], np.int64), -1, -1)


@pytest.mark.parametrize("n_boundaries", [7, COUNT_MAX + 300])  # counted, and searched
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_bucketize_random(rng, dtype, n_boundaries):
    rounded = np.round(rng.standard_normal(n_boundaries - 1) * 10, 1)  # equal boundaries too
    boundaries = sorted(float(np.float32(b)) for b in rounded) + [16777216.0]
    for size in (0, 1, 50, 3000):
        if dtype in (np.float32, np.float64):
            x = (rng.standard_normal(size) * 12).astype(dtype)
            x[: min(size, 4)] = np.array([np.nan, np.inf, -np.inf, boundaries[2]])[: min(size, 4)]
        else:
            x = rng.integers(-20, 20, size).astype(dtype)
            x[: min(size, 3)] = np.array([16777217, 16777215, np.iinfo(dtype).max], dtype)[: min(size, 3)]
        want = tf.raw_ops.Bucketize(input=tf.constant(x), boundaries=boundaries).numpy()
        bounds = np.array(boundaries, np.float32).astype(np.float64 if dtype == np.float64 else np.float32)
        np.testing.assert_array_equal(bucketize(x, bounds), want)


def test_bucketize_no_boundaries():
    x = np.array([-1.0, 0.0, np.nan], np.float32)
    np.testing.assert_array_equal(bucketize(x, np.zeros(0, np.float32)), [0, 0, 0])

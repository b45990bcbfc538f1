"""kernels/cumsum.py, ragged_range.py and broadcast.py (the ops a ragged tf.where is built from)
against TF's raw ops: random inputs, edge cases and TF's errors. Integers bit-exact; floats
bit-exact too (both sum left to right in the input's type). Scalars reach the kernels as
one-element vectors, as generated code passes them."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, run_kernel, run_tf
from tf_blade.kernels.broadcast import broadcast_args, broadcast_to
from tf_blade.kernels.cumsum import cumsum
from tf_blade.kernels.ragged_range import ragged_range

R = tf.raw_ops


def tf_pair(op, **inputs):
    try:
        out = getattr(R, op)(**inputs)
        return tuple(t.numpy() for t in out), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def check_pair(want, tf_err, got, k_err):
    if tf_err is not None or k_err is not None:
        assert_matches_tf(None if got is None else got[0], k_err, None if want is None else want[0], tf_err, same_message=True)
        return
    for g, w in zip(got, want):
        assert_matches_tf(g, None, w, None)


# --- Cumsum ---------------------------------------------------------------------------------

def check_cumsum(x, axis, exclusive, reverse, axis_dtype=np.int32):
    axis = np.array(axis, axis_dtype)
    want, tf_err = run_tf("Cumsum", x=tf.constant(x), axis=tf.constant(axis), exclusive=exclusive, reverse=reverse)
    got, k_err = run_kernel(cumsum, x, axis.reshape(1), exclusive, reverse)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


# Each dtype/rank pair compiles the kernel once (seconds, cold): the ranks vary for float32 only.
@pytest.mark.parametrize("dtype, ranks", [(np.float32, (1, 2, 3)), (np.float64, (2,)), (np.int32, (2,)),
                                          (np.int64, (1,)), (np.int8, (2,))])
def test_cumsum_random(rng, dtype, ranks):
    for _ in range(40):
        rank = int(rng.choice(ranks))
        shape = tuple(int(d) for d in rng.integers(0, 6, size=rank))
        if np.dtype(dtype).kind == "f":
            x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 6, size=shape)).astype(dtype)
        else:
            info = np.iinfo(dtype)  # extremes: sums wrap around as TF's do
            x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
        axis = int(rng.integers(-rank, rank))
        check_cumsum(x, axis, bool(rng.integers(2)), bool(rng.integers(2)))
    check_cumsum(np.arange(6, dtype=dtype).reshape(2, 3), np.int64(-1), True, False, np.int64)


def test_cumsum_signed_zeros_nan_and_inf():
    x = np.array([[-0.0, -0.0, np.inf, -np.inf, 1.0], [np.nan, 2.0, -0.0, 0.0, -0.0]], np.float32)
    for axis in (0, 1, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                check_cumsum(x, axis, exclusive, reverse)


@pytest.mark.parametrize("shape, axis", [((2, 3), 2), ((2, 3), -3), ((4,), 7), ((0, 2), 5)])
def test_cumsum_axis_out_of_range(shape, axis):
    check_cumsum(np.ones(shape, np.float32), axis, False, False)


# --- RaggedRange ----------------------------------------------------------------------------

def check_ragged_range(starts, limits, deltas, splits=np.int64):
    want, tf_err = tf_pair("RaggedRange", starts=tf.constant(starts), limits=tf.constant(limits),
                           deltas=tf.constant(deltas), Tsplits=tf.as_dtype(splits))
    scalars = [a.ndim == 0 for a in (starts, limits, deltas)]
    got, k_err = run_kernel(ragged_range, starts.reshape(-1), limits.reshape(-1), deltas.reshape(-1), *scalars,
                            np.empty(0, splits), starts.dtype.kind == "f")
    check_pair(want, tf_err, got, k_err)


# Vector starts and limits with a scalar delta (RaggedTensor row ids), or all vectors.
@pytest.mark.parametrize("dtype, splits", [(np.int64, np.int64), (np.int32, np.int32), (np.float32, np.int64),
                                           (np.float64, np.int64)])
def test_ragged_range_random(rng, dtype, splits):
    for _ in range(60):
        n = int(rng.integers(0, 6))
        scalar_delta = rng.random() < 0.5
        starts, limits = (rng.integers(-12, 13, size=n).astype(dtype) for _ in range(2))
        deltas = rng.integers(-4, 5, size=() if scalar_delta else n).astype(dtype)
        if np.dtype(dtype).kind == "f":  # sizes and values round
            starts = (starts + rng.random(n)).astype(dtype)
            deltas = np.asarray(np.where(deltas == 0, 0.7, deltas / 3), dtype)
        if rng.random() < 0.1:
            deltas = np.zeros_like(deltas)
        check_ragged_range(starts, limits, np.asarray(deltas), splits)


@pytest.mark.parametrize("starts, limits, deltas", [
    (np.array([0, 1], np.int32), np.array([3, 4, 5], np.int32), np.array(1, np.int32)),   # shapes differ
    (np.array([0.5, 1], np.float32), np.array(3.0, np.float32), np.array(0.0, np.float32)),
    (np.array([0.5, 1], np.float32), np.array(3e30, np.float32), np.array(1e-30, np.float32)),
    (np.array([0.0], np.float64), np.array([np.nan]), np.array([1.0])),
    (np.array([0.0], np.float64), np.array([np.inf]), np.array([1.0])),
    (np.array([0, 1], np.int64), np.array(2**62, np.int64), np.array(1, np.int64)),        # OOM
    (np.array(5, np.int32), np.array(-5, np.int32), np.array(-3, np.int32)),
    (np.zeros(0, np.int64), np.array(3, np.int64), np.array(1, np.int64)),                 # no rows
    (np.array(2, np.int64), np.array(3, np.int64), np.array(1, np.int64)),                 # one row
    (np.array([np.iinfo(np.int64).min], np.int64), np.array([np.iinfo(np.int64).min + 7]), np.array([2])),
])
def test_ragged_range_edges(starts, limits, deltas):
    check_ragged_range(starts, limits, deltas)


def test_ragged_range_refuses_splits_that_overflow():
    # 3 rows of 2**30 each exceed int32 splits: TF would wrap the splits; the kernel refuses.
    got, k_err = run_kernel(ragged_range, np.zeros(3, np.int64), np.array([2**30]), np.array([1]), False, True, True,
                            np.empty(0, np.int32), False)
    assert k_err and "overflows" in k_err


# --- BroadcastArgs / BroadcastTo --------------------------------------------------------------

def check_args(s0, s1):
    want, tf_err = run_tf("BroadcastArgs", s0=tf.constant(s0), s1=tf.constant(s1))
    got, k_err = run_kernel(broadcast_args, s0, s1)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


def check_to(x, shape):
    want, tf_err = run_tf("BroadcastTo", input=tf.constant(x), shape=tf.constant(shape))
    like = np.zeros((0,) * max(len(shape), 1), x.dtype)
    got, k_err = run_kernel(broadcast_to, x, shape, like)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


def random_shape(rng, rank):
    return tuple(int(d) for d in rng.choice([0, 1, 1, 2, 3], size=rank))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_broadcast_args_random(rng, dtype):
    for _ in range(200):
        a = random_shape(rng, int(rng.integers(0, 4)))
        b = list(a[-int(rng.integers(0, len(a) + 1)):] if a else [])
        b = [int(rng.choice([d, 1, 2])) for d in b]
        b = [int(d) for d in rng.integers(1, 3, size=int(rng.integers(0, 2)))] + b
        check_args(np.array(a, dtype), np.array(b, dtype))
    check_args(np.array([-1, 3], dtype), np.array([1, 3], dtype))
    check_args(np.array([-1, 3], dtype), np.array([2, 3], dtype))


@pytest.mark.parametrize("dtype, ranks", [(np.float32, (1, 2, 3)), (np.bool_, (2,))])
def test_broadcast_to_random(rng, dtype, ranks):
    for _ in range(150):
        out_shape = random_shape(rng, int(rng.choice(ranks)))
        keep = int(rng.integers(0, len(out_shape) + 1))
        in_shape = tuple(int(rng.choice([d, 1, 1, 2])) for d in out_shape[len(out_shape) - keep:])
        x = rng.integers(-9, 9, size=in_shape).astype(dtype)
        check_to(x, np.array(out_shape, np.int64))
    check_to(np.ones((1, 2), dtype), np.array([3, 2], np.int32))


@pytest.mark.parametrize("x_shape, shape", [
    ((3,), [2, 3]), ((3,), [2, 4]), ((1, 3), [3]), ((1, 3), [-1, 3]), ((1, 3), [0, 3]),
    ((0, 3), [2, 0, 3]), ((0, 3), [1, 3]), ((3,), [0, 4]), ((), [2, 2]), ((2, 3), [2, 3]),
    ((1,), [2**40, 2**30]), ((1,), [2**31, 2**31]),
])
def test_broadcast_to_edges(x_shape, shape):
    check_to(np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape), np.array(shape, np.int64))

"""kernels/segment_sum.py against tf.raw_ops.SegmentSum / SegmentMax / UnsortedSegmentSum: random sorted ids
with gaps, unsorted and negative ids, ids past the end, and shape errors, with TF's message.
Bit-exact, floats too (SegmentSum adds in TF's Eigen order); UnsortedSegmentSum's floats within
1e-6 relative."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, run_kernel, run_tf
from tf_blade.kernels.errors import new_error_buffer
from tf_blade.kernels.segment_sum import check_prefix, segment_sum, unsorted_segment_sum


def check_sorted(data, ids, op="SegmentSum"):
    want, tf_err = run_tf(op, data=tf.constant(data), segment_ids=tf.constant(ids))
    view = data.reshape(len(data), int(np.prod(data.shape[1:])))
    got, k_err = run_kernel(lambda d, i, err: segment_sum(d, i, err, op == "SegmentMax"), view, ids)
    if got is not None:
        got = got.reshape((got.shape[0],) + data.shape[1:])
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


def check_unsorted(data, ids, num):
    want, tf_err = run_tf("UnsortedSegmentSum", data=tf.constant(data), segment_ids=tf.constant(ids),
                          num_segments=tf.constant(num))
    from tf_blade.kernels.errors import error_text, new_error_buffer
    err = new_error_buffer()
    check_prefix(np.array(data.shape, np.int64), np.array(ids.shape, np.int64), err)
    got = None
    if not err[0]:
        lead = int(np.prod(ids.shape))
        got = unsorted_segment_sum(data.reshape(lead, int(np.prod(data.shape[ids.ndim:]))), ids.ravel(),
                                   np.array(ids.shape, np.int64), np.array([num], np.int64), err)
        got = got.reshape((got.shape[0],) + data.shape[ids.ndim:])
    assert_matches_tf(None if err[0] else got, error_text(err) if err[0] else None, want, tf_err, same_message=True)


@pytest.mark.parametrize("op,dtype", [("SegmentSum", np.float32), ("SegmentSum", np.int64), ("SegmentMax", np.int64),
                                      ("SegmentMax", np.int32)])
def test_segment_sum_random(rng, op, dtype):
    for _ in range(40):
        n = int(rng.integers(0, 8))
        ids = np.sort(rng.integers(0, 6, n)).astype(np.int32)
        if n and rng.random() < 0.2:
            ids[rng.integers(0, n)] = rng.integers(-2, 8)  # breaks the order or goes negative
        info = np.iinfo(dtype) if op == "SegmentMax" else None  # Max: extremes, negatives, gaps (empty = 0)
        data = rng.integers(-9, 9, (n, int(rng.integers(0, 3)), 2)).astype(dtype)
        if info is not None and data.size:
            data.flat[rng.integers(0, data.size, 2)] = [info.min, info.max]
        check_sorted(data, ids, op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_float_segments_add_in_tfs_order(rng, dtype):
    # from 16 rows on, Eigen spreads a segment over 4 packet accumulators for the outputs that fill
    # a packet (8 float32 or 4 float64 on x86-64): bit-exact, not just close
    for _ in range(20):
        counts = rng.integers(1, 40, int(rng.integers(1, 5)))
        ids = np.repeat(np.arange(len(counts)), counts).astype(np.int32)
        data = rng.standard_normal((len(ids), int(rng.integers(1, 20)))).astype(dtype)
        want, _ = run_tf("SegmentSum", data=tf.constant(data), segment_ids=tf.constant(ids))
        got, err = run_kernel(lambda d, i, err: segment_sum(d, i, err), data, ids)
        assert err is None
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["SegmentSum", "SegmentMax"])
@pytest.mark.parametrize("ids", [[0, 2, 1], [-1, 0, 1], [0, 1], [0, -1, -1]])
def test_segment_sum_bad_ids(ids, op):
    check_sorted(np.arange(3, dtype=np.int64), np.array(ids, np.int32), op)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_unsorted_segment_sum_random(rng, dtype):
    for _ in range(40):
        shape = tuple(int(d) for d in rng.integers(0, 4, int(rng.integers(1, 4))))
        ids = rng.integers(-1, 5, shape[: int(rng.integers(0, len(shape) + 1))]).astype(np.int64)
        data = rng.integers(-9, 9, shape).astype(dtype)
        check_unsorted(data, ids, int(rng.integers(3, 6)) if rng.random() < 0.9 else -1)


def test_unsorted_segment_sum_checks_ids_whenever_there_is_data():
    # TF skips the id check only when the data is empty, not when the output is: num_segments=0
    # with data still rejects an id of 0
    for data, ids, num in ((np.ones(3, np.float32), [0, 5, 6], 0), (np.ones(3, np.float32), [-1, -2, -3], 0),
                           (np.ones((3, 0), np.float32), [0, 5, 6], 0), (np.ones((3, 0), np.float32), [0, 5, 6], 2),
                           (np.ones(0, np.float32), [], 0)):
        check_unsorted(data, np.array(ids, np.int64), num)


def test_unsorted_segment_sum_shape_mismatch():
    check_unsorted(np.ones((1, 3), np.float32), np.array([0, 1], np.int64), 3)


def test_signed_zeros_keep_tfs_bits():
    # TF copies a one-row segment (-0.0 stays -0.0) and sums longer ones from +0.0 (and so does
    # UnsortedSegmentSum, for every segment): the bits, not just the values, must match
    data = np.array([[-0.0, 0.0], [-0.0, -0.0], [-0.0, -0.0], [0.0, -0.0], [-0.0, 1.0]], np.float32)
    for ids in ([0, 1, 1, 3, 4], [0, 0, 0, 2, 5], [1, 2, 3, 4, 5]):
        ids = np.array(ids, np.int32)
        for op in ("SegmentSum", "UnsortedSegmentSum"):
            args = dict(data=tf.constant(data), segment_ids=tf.constant(ids))
            if op == "UnsortedSegmentSum":
                args["num_segments"] = tf.constant(6)
            want = getattr(tf.raw_ops, op)(**args).numpy()
            err = new_error_buffer()
            got = segment_sum(data, ids, err) if op == "SegmentSum" else \
                unsorted_segment_sum(data, ids, np.array(ids.shape, np.int64), np.array([6], np.int64), err)
            assert not err[0]
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{op} {ids}")

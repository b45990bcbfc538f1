"""kernels/concat.py against tf.raw_ops.ConcatV2, random inputs, errors included.

The kernel gets the axis already made non-negative (the lowering adds the rank to a negative
constant axis) and C-contiguous parts.
"""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.concat import concat
from tf_blade.kernels.errors import error_text, new_error_buffer


def check(parts, axis):
    rank = parts[0].ndim
    try:
        want = tf.raw_ops.ConcatV2(values=[tf.constant(p) for p in parts],
                                   axis=tf.constant(axis, tf.int32)).numpy()
        tf_err = None
    except tf.errors.InvalidArgumentError as e:
        want, tf_err = None, e.message
    err = new_error_buffer()
    ax = axis + rank if axis < 0 else axis  # what the lowering passes
    out, shape = concat(tuple(np.ascontiguousarray(p) for p in parts), ax, err)
    if tf_err is not None:
        assert err[0] != 0, f"TF raised {tf_err!r} but the kernel accepted the input"
        assert error_text(err)
        return
    assert err[0] == 0, f"kernel rejected an input TF accepts: {error_text(err)}"
    got = np.ascontiguousarray(out).reshape(tuple(shape))
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# Every (dtype, rank, number of parts) is a compile of its own, ~4 s of CI: float32 takes 2 to 4
# parts, the other dtypes 3 (zero-width parts still vary what joins).
@pytest.mark.parametrize("dtype, n_parts", [(np.float32, (2, 5)), (np.int64, (3, 4)), (np.bool_, (3, 4))])
def test_concat_random(rng, dtype, n_parts):
    for _ in range(60):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(0, 5, size=rank)]
        axis = int(rng.integers(-rank, rank))
        parts = []
        for _ in range(int(rng.integers(*n_parts))):
            s = list(shape)
            s[axis] = int(rng.integers(0, 4))
            parts.append((rng.integers(-9, 9, size=s)).astype(dtype))
        if rng.random() < 0.2:  # break one non-axis dimension
            k = int(rng.integers(0, len(parts)))
            other = [d for d in range(rank) if d != axis % rank]
            if other:
                s = list(parts[k].shape)
                s[other[0]] += 1
                parts[k] = np.zeros(s, dtype)
        check(parts, axis)


def test_concat_empty_parts():
    f = np.float32
    check([np.zeros((0, 3), f), np.zeros((0, 3), f)], 0)
    check([np.zeros((0, 3), f), np.zeros((0, 2), f)], 1)
    check([np.zeros((2, 0), f), np.ones((2, 3), f), np.zeros((2, 0), f)], 1)
    check([np.zeros((0, 3), f), np.ones((2, 3), f)], 0)


def test_concat_mismatched_dims_set_error():
    f = np.float32
    check([np.ones((2, 3), f), np.ones((3, 3), f)], 1)
    check([np.ones((2, 3), f), np.ones((2, 4), f)], 0)
    check([np.ones((2, 3, 4), f), np.ones((2, 3, 5), f)], -2)


@pytest.mark.parametrize("axis", [2, 3, -3, 100, -2**31])
def test_concat_axis_out_of_range_sets_error(axis):
    f = np.float32
    parts = [np.ones((2, 3), f), np.ones((2, 3), f)]
    try:
        tf.raw_ops.ConcatV2(values=parts, axis=tf.constant(axis, tf.int32))
        raise AssertionError("TF accepted the axis")
    except tf.errors.InvalidArgumentError:
        pass
    err = new_error_buffer()
    concat(tuple(parts), axis + 2 if axis < 0 else axis, err)
    assert err[0] != 0 and error_text(err)

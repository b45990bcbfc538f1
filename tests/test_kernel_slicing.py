"""kernels/slicing.py against tf.raw_ops.Slice and tf.raw_ops.StridedSlice (ranks 1 to 4, begin /
end / shrink masks), random specs including negative, out-of-range and extreme values."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.slicing import shrunk_shape, slice_bounds, strided_slice_bounds, take

I64 = np.iinfo(np.int64)


def tf_outcome(fn):
    try:
        return fn().numpy(), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def check_slice(x, begin, size):
    want, tf_err = tf_outcome(lambda: tf.raw_ops.Slice(input=tf.constant(x), begin=tf.constant(begin),
                                                       size=tf.constant(size)))
    err = new_error_buffer()
    bounds = slice_bounds(np.array(x.shape, np.int64), begin, size, err)
    got, k_err = (None, error_text(err)) if err[0] else (take(x, bounds).reshape(tuple(shrunk_shape(bounds))), None)
    assert_matches_tf(got, k_err, want, tf_err)


def check_strided(x, begin, end, strides, begin_mask=0, end_mask=0, shrink_mask=0):
    want, tf_err = tf_outcome(lambda: tf.raw_ops.StridedSlice(
        input=tf.constant(x), begin=tf.constant(begin), end=tf.constant(end),
        strides=tf.constant(strides), begin_mask=begin_mask, end_mask=end_mask,
        shrink_axis_mask=shrink_mask))
    err = new_error_buffer()
    bounds = strided_slice_bounds(np.array(x.shape, np.int64), begin, end, strides,
                                  begin_mask, end_mask, shrink_mask, err)
    if err[0]:
        got, k_err = None, error_text(err)
    else:
        got, k_err = take(x, bounds).reshape(tuple(shrunk_shape(bounds))), None
    assert_matches_tf(got, k_err, want, tf_err)


def random_x(rng):
    shape = tuple(int(d) for d in rng.integers(0, 6, size=int(rng.integers(1, 5))))
    return rng.integers(-100, 100, size=shape).astype(rng.choice([np.float32, np.int64, np.int32]))


def spec_value(rng, dim):
    r = rng.random()
    if r < 0.7:
        return int(rng.integers(-dim - 2, dim + 3))
    return int(rng.choice([I64.min, I64.max, I64.min + 1, I64.max - 1, 2**31, -2**31]))


@pytest.mark.parametrize("spec_dtype", [np.int32, np.int64])
def test_slice_random(rng, spec_dtype):
    for _ in range(300):
        x = random_x(rng)
        begin = [int(rng.integers(-1, d + 2)) for d in x.shape]
        size = [int(rng.integers(-2, d + 2)) for d in x.shape]
        if rng.random() < 0.3:
            size[rng.integers(0, x.ndim)] = -1
        check_slice(x, np.array(begin, spec_dtype), np.array(size, spec_dtype))


@pytest.mark.parametrize("begin, size", [
    ([2**63 - 1], [2]), ([2], [2**63 - 1]), ([I64.min], [1]), ([1], [I64.min]),
    ([6], [-1]), ([5], [-1]), ([5], [0]), ([6], [0]), ([-1], [0]), ([0], [6]),
    ([3], [2**63 - 3]),
])
def test_slice_extreme_values(begin, size):
    check_slice(np.arange(5, dtype=np.float32), np.array(begin, np.int64), np.array(size, np.int64))


def test_slice_empty_and_wrong_length():
    x = np.zeros((0, 3), np.float32)
    check_slice(x, np.array([0, 1], np.int64), np.array([0, 2], np.int64))
    check_slice(x, np.array([0, 1], np.int64), np.array([-1, -1], np.int64))
    check_slice(x, np.array([1, 1], np.int64), np.array([0, 2], np.int64))
    y = np.arange(5, dtype=np.int32)
    check_slice(y, np.array([1, 1], np.int64), np.array([0, 0], np.int64))   # spec longer than rank
    check_slice(y, np.array([1], np.int64), np.array([0, 0], np.int64))


@pytest.mark.parametrize("spec_dtype", [np.int32, np.int64])
def test_strided_slice_random(rng, spec_dtype):
    info = np.iinfo(spec_dtype)
    for _ in range(400):
        x = random_x(rng)
        n = int(rng.integers(1, x.ndim + 1)) if rng.random() < 0.9 else x.ndim + 1
        dims = list(x.shape) + [3]
        begin = [spec_value(rng, dims[d]) for d in range(n)]
        end = [spec_value(rng, dims[d]) for d in range(n)]
        strides = [int(rng.choice([1, 1, 2, 3, -1, -2, 7, -7])) for _ in range(n)]
        if rng.random() < 0.05:
            strides[rng.integers(0, n)] = int(rng.choice([0, I64.max, I64.min, I64.min + 1]))
        masks = [int(rng.integers(0, 1 << n)) if rng.random() < 0.5 else 0 for _ in range(3)]
        spec = [np.clip(np.array(v, np.int64), info.min, info.max).astype(spec_dtype)
                for v in (begin, end, strides)]
        check_strided(x, *spec, *masks)


def test_strided_slice_shrink_cases():
    x = np.arange(5, dtype=np.float32)
    a = lambda *v: np.array(v, np.int64)
    check_strided(x, a(7), a(0), a(1), begin_mask=1, shrink_mask=1)   # shrink ignores begin_mask
    check_strided(x, a(2), a(0), a(1), begin_mask=1, shrink_mask=1)
    check_strided(x, a(2), a(0), a(-1), shrink_mask=1)                # only stride 1 ... allowed
    check_strided(x, a(2), a(0), a(2), shrink_mask=1)
    check_strided(x, a(2), a(0), a(1), end_mask=1, shrink_mask=1)
    check_strided(x, a(-5), a(0), a(1), shrink_mask=1)
    check_strided(x, a(-6), a(0), a(1), shrink_mask=1)
    check_strided(x, a(5), a(0), a(1), shrink_mask=1)
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    check_strided(m, a(1, -1), a(0, 0), a(1, 1), shrink_mask=3)
    check_strided(m, a(-1), a(0), a(1), shrink_mask=1)
    check_strided(m, a(0, 3), a(3, 0), a(1, -1), shrink_mask=1)


def test_strided_slice_bad_specs():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = lambda *v: np.array(v, np.int64)
    check_strided(x, a(0), a(1, 2), a(1))               # begin/end/strides lengths differ
    check_strided(x, a(0, 0), a(1), a(1, 1))
    check_strided(x, a(0, 0), a(1, 1), a(1))
    check_strided(x, a(0, 0, 0), a(1, 1, 1), a(1, 1, 1))  # more specs than dims
    check_strided(x, a(0), a(1), a(0))                  # zero stride
    check_strided(np.zeros(0, np.float32), a(0), a(0), a(-1))


@pytest.mark.parametrize("stride", [I64.max, I64.min, I64.min + 1, 2**62, -2**62])
def test_strided_slice_extreme_strides(stride):
    x = np.arange(5, dtype=np.float32)
    for b, e in ((0, 5), (4, -6), (I64.min, I64.max), (I64.max, I64.min), (2, 2)):
        check_strided(x, np.array([b], np.int64), np.array([e], np.int64), np.array([stride], np.int64))


_SLICES = {  # name: (x -> slice), the Python forms that make ellipsis / new-axis masks
    "ellipsis_last": lambda x: x[..., 0],
    "ellipsis_mid": lambda x: x[1:, ..., ::-1],
    "new_axis": lambda x: x[:, tf.newaxis],
    "new_axes_around_ellipsis": lambda x: x[tf.newaxis, ..., tf.newaxis, 1:2],
    "shrink_then_new": lambda x: x[0, tf.newaxis, :, -1],
    "ellipsis_only": lambda x: x[...],
    "new_after_shrink": lambda x: x[-1, ..., tf.newaxis],
}


@pytest.fixture(scope="module")
def fused_slices():
    import tf_blade
    from conftest import op_counts

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float32)])
    def slices(x):
        return {name: f(x) * 2.0 for name, f in _SLICES.items()}
    fused = tf_blade.optimize(slices, min_cluster_size=1).signatures["serving_default"]
    assert "StridedSlice" not in op_counts(fused), op_counts(fused)
    return slices, fused


@pytest.mark.parametrize("n", [0, 1, 5])
def test_fused_ellipsis_and_new_axis_slices(fused_slices, rng, n):
    slices, fused = fused_slices
    x = tf.constant(rng.standard_normal((n, 3, 4)).astype(np.float32))
    if n == 0:  # x[0] and x[-1] of an empty batch: both refuse (which one TF names depends on
        with pytest.raises(tf.errors.InvalidArgumentError):  # which of its ops runs first)
            slices(x)
        with pytest.raises(tf.errors.InvalidArgumentError):
            fused(x)
        return
    want, got = slices(x), fused(x)
    for name in _SLICES:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_array_equal(got[name].numpy(), want[name].numpy(), err_msg=name)


@pytest.mark.parametrize("shape, begin, size", [
    ((0,), [0], [-1]), ((0,), [1], [-1]), ((0,), [0], [1]),  # an empty dim: "Expected begin[0] == 0 (got 1) and ..."
    ((0, 3), [0, 1], [0, 5]), ((3, 0), [0, 0], [2, -1]),
    ((3,), [1], [I64.max]), ((3, 2), [1, 0], [I64.max, 1]),  # begin + size wraps past TF's check: OOM
    ((3, 2), [2, 0], [I64.max - 1, 5]),                      # ... unless a later dim is refused first
    ((3, 2), [1, 0], [I64.max, 2]),                          # the element count overflows
    ((3,), [I64.max], [I64.max]), ((3,), [1], [-2]),
])
def test_slice_edges_get_tfs_answer_or_message(shape, begin, size):
    check_slice(np.ones(shape, np.float32), np.array(begin, np.int64), np.array(size, np.int64))

"""kernels/shape_ops.py: resolve_reshape against tf.raw_ops.Reshape, expanded_shape against
tf.raw_ops.ExpandDims, shape_of against tf.raw_ops.Shape, transposed against tf.transpose."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from numba import njit
from numba.core.errors import TypingError

from conftest import error_core, factor_into
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.shape_ops import expanded_shape, resolve_reshape, shape_of, transposed

I64 = np.iinfo(np.int64)


# --------------------------------------------------------------------------------------------
# resolve_reshape
# --------------------------------------------------------------------------------------------

def tf_reshape_shape(in_shape, target):
    try:
        x = tf.zeros(in_shape, tf.int8)
        return np.array(tf.raw_ops.Reshape(tensor=x, shape=tf.constant(target)).shape, np.int64), None
    except tf.errors.InvalidArgumentError as e:
        return None, e.message


def kernel_reshape(in_dims, target):
    err = new_error_buffer()
    out = resolve_reshape(in_dims, target, err)
    return (None, error_text(err)) if err[0] else (out, None)


def check_reshape(in_shape, target, dtype=np.int64):
    target = np.array(target, dtype)
    want, tf_err = tf_reshape_shape(in_shape, target)
    size = int(np.prod(in_shape, dtype=np.int64))
    # The kernel takes the input's shape; given only its size it must agree whenever the size
    # determines TF's answer (no zero-sized dims in both shapes at once, or a rank-1 input).
    forms = [tuple(in_shape) or (1,)]  # a rank-0 input travels as shape (1,)
    if size != 0 or 0 not in target or len(in_shape) <= 1:
        forms.append(size)
    for form in forms:
        got, k_err = kernel_reshape(form, target)
        if tf_err is not None:
            assert k_err == error_core(tf_err), f"{in_shape} -> {target}"
        else:
            assert k_err is None, f"kernel rejected {in_shape} -> {target}: {k_err}"
            np.testing.assert_array_equal(got, want, err_msg=f"{form} -> {target}")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reshape_random(rng, dtype):
    for _ in range(250):
        in_shape = [int(d) for d in rng.integers(1, 6, size=int(rng.integers(0, 4)))]
        if in_shape and rng.random() < 0.25:
            in_shape[rng.integers(0, len(in_shape))] = 0
        size = int(np.prod(in_shape, dtype=np.int64))
        target = factor_into(rng, size, int(rng.integers(0, 4)))
        if size == 0 and rng.random() < 0.5:  # zero-sized: TF infers -1 from the non-zero dims
            target = [int(rng.choice([0, 1, 2, 3, 5]))] + target
        r = rng.random()
        if target and r < 0.5:
            target[rng.integers(0, len(target))] = -1
        elif target and r < 0.65:
            target[rng.integers(0, len(target))] += int(rng.choice([1, -2, 3]))
        elif r < 0.75:
            target = target + [-1, -1]
        check_reshape(in_shape, target, dtype)


def test_reshape_zero_sized_inference():
    # TF leaves zero-sized dims out of both products when inferring -1.
    for in_shape, target in [((0,), [0, -1]), ((0,), [3, -1]), ((0, 6), [0, -1]), ((0, 6), [0, 2, -1]),
                             ((4, 0), [0, -1]), ((4, 0), [-1, 0]), ((2, 0, 3), [0, -1]),
                             ((2, 0, 3), [-1, 0, 3]), ((6,), [0, -1]), ((0,), [-1]), ((), [-1]),
                             ((), []), ((1,), []), ((0,), [5, -1, 0])]:
        check_reshape(in_shape, list(target))


@pytest.mark.parametrize("in_shape, target", [
    ((5,), [2**62, 4, 0]),        # "Shape [...] has too many elements"
    ((0,), [2**62, 4, -1]),
    ((0,), [I64.max, 2, 0]),
    ((5,), [-2]),
    ((5,), [I64.min]),
    ((5,), [-1, -1]),
    ((6,), [4, -1]),
    ((6,), [7]),
    ((6,), [3, 0, -1]),
])
def test_reshape_bad_targets_set_error(in_shape, target):
    check_reshape(in_shape, target)


def test_reshape_overflowing_known_product_next_to_zero():
    # TF itself dies with SIGFPE here (its product of the non-zero sizes wraps to 0 and it divides
    # by it); the kernel reports an error instead. Only the kernel runs.
    for target in ([0, 2**62, 4, -1], [2**32, 0, 2**32, -1]):
        for form in ((0,), (0, 7), 0):
            got, k_err = kernel_reshape(form, np.array(target, np.int64))
            assert k_err and "too many elements" in k_err


# --------------------------------------------------------------------------------------------
# expanded_shape, shape_of
# --------------------------------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=4), axis=st.integers(-7, 7))
def test_expanded_shape_hypothesis(shape, axis):
    x = np.zeros(shape, np.float32)
    try:
        want = np.array(tf.raw_ops.ExpandDims(input=tf.constant(x), axis=tf.constant(axis)).shape, np.int64)
        tf_err = None
    except tf.errors.InvalidArgumentError as e:
        want, tf_err = None, e.message
    err = new_error_buffer()
    got = expanded_shape(x if x.ndim else x.reshape(1), x.ndim, axis, err)
    if tf_err is not None:
        assert err[0] != 0 and error_text(err)
    else:
        assert err[0] == 0, error_text(err)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [np.iinfo(np.int32).min, np.iinfo(np.int32).max, I64.min, I64.max])
def test_expanded_shape_extreme_axis_sets_error(axis):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.ExpandDims(input=tf.constant(x), axis=tf.constant(axis))
    err = new_error_buffer()
    expanded_shape(x, 2, axis, err)
    assert err[0] != 0 and str(axis) in error_text(err)


@pytest.mark.parametrize("out_type", [np.int32, np.int64])
def test_shape_of(rng, out_type):
    for _ in range(30):
        shape = tuple(int(d) for d in rng.integers(0, 5, size=int(rng.integers(0, 5))))
        x = np.zeros(shape, np.float32)
        want = tf.raw_ops.Shape(input=tf.constant(x), out_type=tf.as_dtype(out_type)).numpy()
        err = new_error_buffer()
        got = shape_of(x if x.ndim else x.reshape(1), x.ndim, np.empty(0, out_type), err)
        assert got.dtype == want.dtype and err[0] == 0
        np.testing.assert_array_equal(got, want)


_HUGE_DIMS = [[0, 2**31], [2**31 - 1, 0], [2**32 + 5, 0], [0, 2**31 - 2]]


# [1, 2**31 - 1] fills 2 GB (TF's Fill and the fused op's; ~20 s of a CI worker): Size only, whose
# element-count bound needs it. Shape's per-dim bound is [2**31 - 1, 0]'s.
@pytest.mark.parametrize("op, dims", [(op, dims) for op in ("Shape", "Size") for dims in _HUGE_DIMS]
                         + [("Size", [1, 2**31 - 1])])
def test_fused_int32_shape_and_size_of_huge_dims(op, dims):
    """Shape and Size with int32 outputs refuse what does not fit as TF does, empty tensors
    included (fuzz round 4: Shape wrapped the dim). One op a function: TF runs independent ops in
    any order, so with two failing it may report either."""
    import tf_blade
    measure = tf.shape if op == "Shape" else (lambda t: tf.size(t, out_type=tf.int32))
    f = tf.function(lambda d: (measure(tf.fill(d, tf.constant(1, tf.int8))),), input_signature=[tf.TensorSpec([2], tf.int64)])
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.functions["serving_default"]["clusters"][0]["op_types"].get(op) == 1
    fused = opt.signatures["serving_default"]
    fused(tf.constant([1, 2], tf.int64))  # a valid first call: the first-run check runs TF's ops
    results = []
    for fn in (f, fused):
        try:
            results.append([t.numpy().tolist() for t in fn(tf.constant(dims, tf.int64))])
        except tf.errors.InvalidArgumentError as e:
            results.append(e.message)
    if isinstance(results[0], str):
        assert isinstance(results[1], str) and error_core(results[0]) == error_core(results[1]), results
    else:
        assert results[0] == results[1]


@njit
def _transposed_copies(x):
    return (np.ascontiguousarray(transposed(x, (0, 1, 2))), np.ascontiguousarray(transposed(x, (2, 0, 1))),
            np.ascontiguousarray(transposed(x, (1, 2, 0))), np.ascontiguousarray(transposed(x[:, ::2], (0, 2, 1))))


def test_transposed_views_as_tfs_transpose():
    x = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4)
    x[0, 0, 0] = -0.0
    got = _transposed_copies(x)
    for g, perm in zip(got[:3], ((0, 1, 2), (2, 0, 1), (1, 2, 0))):
        want = tf.transpose(x, perm).numpy()
        assert g.shape == want.shape and g.tobytes() == want.tobytes()
    assert got[3].tobytes() == tf.transpose(x[:, ::2], (0, 2, 1)).numpy().tobytes()
    empty = np.zeros((3, 0, 2), np.int64)
    assert _transposed_copies(empty)[1].shape == (2, 3, 0)


def test_transposed_takes_only_a_permutation():
    @njit
    def bad(x):
        return transposed(x, (0, 0))

    with pytest.raises(TypingError, match="not a permutation"):
        bad(np.zeros((2, 2)))

"""kernels/sparse_reshape.py against tf.raw_ops.SparseReshape, random inputs, errors included."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import factor_into
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.sparse_reshape import sparse_reshape

I64 = np.iinfo(np.int64)


def tf_sparse_reshape(indices, shape, new_shape):
    try:
        out = tf.raw_ops.SparseReshape(input_indices=tf.constant(indices, tf.int64),
                                       input_shape=tf.constant(shape, tf.int64),
                                       new_shape=tf.constant(new_shape, tf.int64))
        return (out.output_indices.numpy(), out.output_shape.numpy()), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def check(indices, shape, new_shape):
    indices = np.asarray(indices, np.int64)
    assert indices.ndim == 2
    shape = np.asarray(shape, np.int64)
    new_shape = np.asarray(new_shape, np.int64)
    return check_raw(indices, shape, new_shape)


def check_raw(indices, shape, new_shape):
    want, tf_err = tf_sparse_reshape(indices, shape, new_shape)
    err = new_error_buffer()
    got_idx, got_shape = sparse_reshape(indices, shape, new_shape, err)
    if tf_err is not None:
        assert err[0] != 0, f"TF raised {tf_err!r} but the kernel accepted the input"
        assert error_text(err)
        return
    assert err[0] == 0, f"kernel rejected an input TF accepts: {error_text(err)}"
    assert got_idx.dtype == np.int64 and got_shape.dtype == np.int64
    np.testing.assert_array_equal(got_shape, want[1])
    assert got_idx.shape == want[0].shape, (got_idx.shape, want[0].shape)
    np.testing.assert_array_equal(got_idx, want[0])


def random_case(rng):
    in_rank = int(rng.integers(0, 5))
    shape = [int(d) for d in rng.integers(1, 7, size=in_rank)]
    if in_rank and rng.random() < 0.1:
        shape[rng.integers(0, in_rank)] = 0
    size = int(np.prod(shape, dtype=np.int64))
    nnz = int(rng.integers(0, 12))
    if size:
        indices = np.stack([rng.integers(0, d, nnz) for d in shape], axis=1) if in_rank \
            else np.zeros((nnz, 0), np.int64)
    else:
        indices = np.zeros((0, in_rank), np.int64)
    out_rank = int(rng.integers(0, 5))
    new_shape = factor_into(rng, size, out_rank)
    if out_rank and size and rng.random() < 0.5:
        new_shape[rng.integers(0, out_rank)] = -1
    return indices.astype(np.int64).reshape(indices.shape[0], in_rank), np.array(shape, np.int64), \
        np.array(new_shape, np.int64)


def test_sparse_reshape_random_valid(rng):
    for _ in range(200):
        check_raw(*random_case(rng))


def test_sparse_reshape_random_invalid_shapes(rng):
    for _ in range(150):
        indices, shape, new_shape = random_case(rng)
        if len(new_shape) == 0:
            new_shape = np.array([-1], np.int64)
        k = rng.integers(0, len(new_shape))
        kind = rng.integers(0, 5)
        if kind == 0:
            new_shape[k] = new_shape[k] + 1 if new_shape[k] >= 0 else 7  # wrong element count
        elif kind == 1:
            new_shape = np.concatenate([new_shape, [-1, -1]])          # two unknowns
        elif kind == 2:
            new_shape[k] = rng.choice([-2, I64.min])                   # negative size
        elif kind == 3:
            new_shape = np.concatenate([new_shape, [0, -1]])           # -1 next to a zero
        else:
            new_shape = np.concatenate([new_shape, [2**62, 4]])        # product overflows
        check_raw(indices, shape, new_shape.astype(np.int64))


def test_sparse_reshape_unsorted_and_duplicate_indices(rng):
    shape = np.array([4, 5, 6], np.int64)
    idx = np.stack([rng.integers(0, d, 50) for d in shape], axis=1)
    idx[10] = idx[3]
    for new_shape in ([120], [-1, 30], [6, 5, 4], [2, -1, 3, 4], [4, 5, 6]):
        check_raw(idx, shape, np.array(new_shape, np.int64))


def test_sparse_reshape_out_of_range_indices_follow_tf(rng):
    # TF does not validate indices in SparseReshape: it re-linearises whatever it gets (C++
    # integer division truncating toward zero), and passes them through for an identical shape.
    shape = np.array([3, 4], np.int64)
    for idx in ([[7, 2]], [[7, -2]], [[-1, -1]], [[0, 100]], [[-5, 3], [2, 2]]):
        for new_shape in ([12], [2, 6], [3, 4], [-1, 3], [2, 2, 3]):
            check(idx, shape, new_shape)


def test_sparse_reshape_rank_zero_and_empty():
    check(np.zeros((2, 0)), [], [1, -1])
    check(np.zeros((0, 0)), [], [1, 1, -1])
    check(np.zeros((0, 2)), [0, 4], [0, 2**62, 4])     # zero first: nothing overflows
    check(np.zeros((0, 2)), [0, 4], [2, 0, -1])        # -1 next to a zero: TF refuses
    check(np.zeros((0, 2)), [0, 4], [4, 0])            # same size, different shape
    check(np.zeros((2, 2)), [2, 3], [])                # rank-0 target of a 6-element tensor
    check(np.zeros((1, 0)), [], [])                    # scalar to scalar


def test_sparse_reshape_nonzeros_in_empty_shape_set_error():
    # TF: "Input tensor has 1 non zero elements but input shape ([0,4]) or output shape ... is empty"
    check([[1, 1]], [0, 4], [4, 0])
    check([[1, 1]], [0, 4], [0, 2**62, 4])
    # ...but an identical shape is passed through untouched, even then.
    check([[1, 1]], [0, 4], [0, 4])


@pytest.mark.parametrize("indices, shape, new_shape", [
    # Advisories (CHECK-failures / overflows in SparseReshape's shape handling):
    ([[1, 1]], [2**62, 4], [-1]),             # input shape overflows int64
    ([[1, 1]], [3, 4], [2**62, 4, 0]),        # requested shape overflows before its zero
    ([[1, 1]], [I64.max, I64.max], [-1]),
    ([[1, 1]], [-3, 4], [-1]),                # negative input dimension
    ([[1, 1]], [3, 4], [-1, -1]),             # two unknown dimensions
    ([[1, 1]], [3, 4], [5, -1]),              # not a multiple
    ([[1, 1]], [3, 4], [13]),                 # wrong size
    ([[1, 1]], [3, 4], [I64.min]),
    ([[1, 1]], [3, 4], [0, -1]),              # cannot infer next to a zero
    ([[1, 2, 3]], [3, 4], [12]),              # indices rank != input shape length
    ([[1]], [3, 4, 5], [60]),
])
def test_sparse_reshape_malicious_inputs_set_error(indices, shape, new_shape):
    idx = np.array(indices, np.int64)
    want, tf_err = tf_sparse_reshape(idx, np.array(shape, np.int64), np.array(new_shape, np.int64))
    assert tf_err is not None  # guard: these must stay bad inputs for TF
    check_raw(idx, np.array(shape, np.int64), np.array(new_shape, np.int64))


def test_sparse_reshape_large(rng):
    shape = np.array([64, 50, 9], np.int64)
    idx = np.stack([rng.integers(0, d, 20000) for d in shape], axis=1)
    check_raw(idx, shape, np.array([-1, 9], np.int64))
    check_raw(idx, shape, np.array([32, 2, 5, 10, 9], np.int64))


@pytest.mark.parametrize("shape, new_shape", [([2**62, 2], [-1]), ([2**62, 4], [-1]),
                                              ([3, 4], [2**62, 2, 0]), ([3, 4], [2**62, 4, 0])])
def test_overflow_messages_print_tfs_result(shape, new_shape):
    # TF's MultiplyWithoutOverflow gives the product read as int64 while it fits 64 unsigned bits
    # (2**62 * 2 -> -2**63), else -1; the message prints that "result"
    idx = np.array([[1, 1]], np.int64)
    _, tf_err = tf_sparse_reshape(idx, np.array(shape, np.int64), np.array(new_shape, np.int64))
    err = new_error_buffer()
    sparse_reshape(idx, np.array(shape, np.int64), np.array(new_shape, np.int64), err)
    assert error_text(err) == tf_err.split(" [Op:")[0].split("}} ")[-1]

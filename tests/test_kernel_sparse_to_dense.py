"""kernels/sparse_to_dense.py against tf.raw_ops.SparseToDense: random sorted and unsorted,
duplicate, negative and out-of-bounds indices, scalar and per-index values, with and without
validate_indices, and the shape errors; TF's message when TF rejects the input."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, run_kernel, run_tf
from tf_blade.kernels.sparse_to_dense import sparse_to_dense


def check(indices, shape, values, default=0, validate=True):
    indices, shape, values = np.asarray(indices, np.int64), np.asarray(shape, np.int64), np.asarray(values, np.int32)
    want, tf_err = run_tf("SparseToDense", sparse_indices=tf.constant(indices), output_shape=tf.constant(shape),
                          sparse_values=tf.constant(values), default_value=tf.constant(default, tf.int32),
                          validate_indices=validate)
    view = indices.reshape({0: (1, 1), 1: (-1, 1), 2: indices.shape}[indices.ndim])
    got, k_err = run_kernel(sparse_to_dense, view, shape.ravel(), values.reshape(-1), values.ndim == 0,
                            np.array([default], np.int32), validate)
    if got is not None:
        got = got[0].reshape(got[1])
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


@pytest.mark.parametrize("validate", [True, False])
def test_random(rng, validate):
    for _ in range(80):
        ndims = int(rng.integers(1, 4))
        shape = rng.integers(0, 5, ndims)
        n = int(rng.integers(0, 7))
        indices = np.stack([rng.integers(-1 if rng.random() < 0.1 else 0, max(int(d), 1) + (rng.random() < 0.1), n)
                            for d in shape], 1) if n else np.zeros((0, ndims), np.int64)
        if rng.random() < 0.6 and n:  # mostly valid: sorted and unique
            indices = np.unique(indices, axis=0)
        values = rng.integers(-9, 9, len(indices)) if rng.random() < 0.8 else np.int32(7)
        check(indices, shape, values, int(rng.integers(-3, 3)), validate)


@pytest.mark.parametrize("case", [
    ([[1], [0]], [3], [1, 2]),          # out of order
    ([[1], [1]], [3], [1, 2]),          # repeated
    ([[1], [3]], [3], [1, 2]),          # out of bounds
    ([[-1], [1]], [3], [1, 2]),         # negative
    ([[1], [2]], [3], [1, 2, 3]),       # values of the wrong length
    ([[0, 0]], [-1, 3], [1]),           # negative dimension
    ([[0, 0]], [3], [1]),               # shape length != index width
    ([[0, 0]], [2**62, 8], [1]),        # more than 2**63 - 1 elements
    (1, [3], 5),                        # scalar index, scalar value
    ([0, 2], [3], [1, 5]),              # vector of indices into a vector
])
def test_edge_cases(case):
    for validate in (True, False):
        check(*case, validate=validate)

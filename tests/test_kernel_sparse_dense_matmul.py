"""kernels/sparse_dense_matmul.py against tf.raw_ops.SparseTensorDenseMatMul: random COO inputs
(unsorted, duplicate and out-of-range indices), every adjoint pair, int32/int64 indices,
float32/float64/int32 values, B narrower and wider than TF's 32-column vector path. Bit-exact,
floats included (products accumulate in index order, as in TF); TF's messages for bad input.
Then the op fused in a graph, B an embedding variable."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import assert_matches_tf, op_counts, run_kernel, run_tf
from tf_blade.kernels.sparse_dense_matmul import sparse_dense_matmul


def check(indices, values, shape, b, adjoint_a=False, adjoint_b=False):
    want, tf_err = run_tf("SparseTensorDenseMatMul", a_indices=tf.constant(indices), a_values=tf.constant(values),
                          a_shape=tf.constant(shape, tf.int64), b=tf.constant(b), adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    got, k_err = run_kernel(sparse_dense_matmul, indices, values, np.asarray(shape, np.int64), b, adjoint_a, adjoint_b)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


@pytest.mark.parametrize("adjoint_a,adjoint_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("index_dtype,dtype", [(np.int64, np.float32), (np.int32, np.float64), (np.int64, np.int32)])
def test_random_products_match_tf(rng, adjoint_a, adjoint_b, index_dtype, dtype):
    for _ in range(30):
        m, k = (int(x) for x in rng.integers(0, 6, 2))
        n = int(rng.choice([0, 1, 7, 40]))
        nnz = int(rng.integers(0, 12))
        indices = np.stack([rng.integers(0, max(m, 1), nnz), rng.integers(0, max(k, 1), nnz)], 1)
        if nnz and rng.random() < 0.25:  # out of range or negative, in either column
            indices[rng.integers(0, nnz), rng.integers(0, 2)] = rng.choice([-1, m, k, 2**31 - 1])
        shape = [k, m] if adjoint_a else [m, k]
        if adjoint_a:
            indices = indices[:, ::-1]
        values = (rng.standard_normal(nnz) * 10).astype(dtype)
        b = (rng.standard_normal((n, k) if adjoint_b else (k, n)) * 10).astype(dtype)
        check(np.ascontiguousarray(indices).astype(index_dtype), values, shape, b, adjoint_a, adjoint_b)


@pytest.mark.parametrize("indices,values,shape,b_shape", [
    ([[0, 0]], [1.0], [2, 3, 1], (3, 2)),      # a_shape of 3 elements
    ([[0, 0], [1, 1]], [1.0], [2, 3], (3, 2)),  # values shorter than indices
    ([[0, 0, 0]], [1.0], [2, 3], (3, 2)),       # indices of 3 columns
    ([[0, 0]], [1.0], [2, 4], (3, 2)),          # inner dimensions differ
    ([[5, 9]], [1.0], [0, 3], (3, 2)),          # empty output: indices not checked
    ([[5, 9]], [], [2, 3], (3, 2)),             # no values: indices not checked (and a count mismatch)
])
def test_bad_inputs_get_tf_messages(indices, values, shape, b_shape):
    check(np.array(indices, np.int64).reshape(len(indices), -1), np.array(values, np.float32), shape,
          np.ones(b_shape, np.float32))


def test_negative_shape_is_an_error_not_an_abort():
    """TF's own kernel aborts the process on a negative a_shape (a failed CHECK); we raise."""
    _, err = run_kernel(sparse_dense_matmul, np.zeros((1, 2), np.int64), np.ones(1, np.float32),
                        np.array([-2, 3], np.int64), np.ones((3, 2), np.float32), False, False)
    assert err == "Expected shape dimensions to be non-negative, got -2"


def test_fused_with_an_embedding_table(rng):
    table = tf.Variable(rng.standard_normal((50, 40)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.float32),
                                  tf.TensorSpec([2], tf.int64)])
    def weighted_sum(indices, weights, shape):
        return {"out": tf.sparse.sparse_dense_matmul(tf.SparseTensor(indices, weights, shape), table) * 2.0}

    fused = tf_blade.optimize(weighted_sum, min_cluster_size=1).signatures["serving_default"]
    assert "SparseTensorDenseMatMul" not in op_counts(fused) and op_counts(fused)["BladeFusedCall"] == 1
    for n in (0, 1, 64):
        nnz = int(rng.integers(0, 4 * n + 1))
        indices = np.stack([rng.integers(0, max(n, 1), nnz), rng.integers(0, 50, nnz)], 1).astype(np.int64)
        args = (tf.constant(indices.reshape(-1, 2)), tf.constant(rng.standard_normal(nnz).astype(np.float32)),
                tf.constant([n, 50], tf.int64))
        want, got = weighted_sum(*args)["out"].numpy(), fused(*args)["out"].numpy()
        np.testing.assert_array_equal(want.view(np.uint32), got.view(np.uint32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"k \(50\) from index\[0,1\] out of bounds"):
        fused(tf.constant([[0, 50]], tf.int64), tf.constant([1.0]), tf.constant([1, 50], tf.int64))

"""SparseTensorDenseMatMul: a rank-2 SparseTensor A times a dense matrix B (an embedding table,
in recommendation models), with TF's checks in TF's order. Products accumulate in index order,
as TF's CPU loop does, so float results are bit-exact."""
import numpy as np
from numba import njit

from .errors import out_of_memory, set_error


@njit(cache=True, nogil=True)
def sparse_dense_matmul(indices, values, a_shape, b, adjoint_a, adjoint_b, err):
    empty = np.zeros((0, 0), b.dtype)
    if a_shape.shape[0] != 2:
        set_error(err, "Tensor 'a_shape' must have 2 elements")
        return empty
    nnz = indices.shape[0]
    if nnz != values.shape[0]:
        set_error(err, "Number of rows of a_indices does not match number of entries in a_values")
        return empty
    if indices.shape[1] != 2:
        set_error(err, "Number of columns of a_indices does not match number of entries in a_shape")
        return empty
    rows = np.int64(a_shape[1] if adjoint_a else a_shape[0])
    inner = np.int64(a_shape[0] if adjoint_a else a_shape[1])
    cols = b.shape[0] if adjoint_b else b.shape[1]
    b_inner = b.shape[1] if adjoint_b else b.shape[0]
    if inner != b_inner:
        set_error(err, "Cannot multiply A and B because inner dimension does not match: ", inner, " vs. ", b_inner,
                  ".  Did you forget a transpose?  Dimensions of A: [", a_shape[0], ", ", a_shape[1],
                  ").  Dimensions of B: ", b.shape)
        return empty
    if rows < 0:  # TF aborts the process here (a failed shape CHECK); this is its message
        set_error(err, "Expected shape dimensions to be non-negative, got ", rows)
        return empty
    try:  # a_shape is data: it may ask for more rows than can be allocated
        out = np.zeros((rows, cols), b.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, cols), np.int64))
        return empty
    if out.size == 0 or b.size == 0:  # TF checks no index then
        return out
    m_col = 1 if adjoint_a else 0
    k_col = 1 - m_col
    for i in range(nnz):
        m, k = np.int64(indices[i, m_col]), np.int64(indices[i, k_col])
        if k < 0 or k >= b_inner:
            set_error(err, "k (", k, ") from index[", i, ",", k_col, "] out of bounds (>=", b_inner, ")")
            return out
        if m < 0 or m >= rows:
            set_error(err, "m (", m, ") from index[", i, ",", m_col, "] out of bounds (>=", rows, ")")
            return out
        a = values[i]
        if adjoint_b:
            for n in range(cols):
                out[m, n] += a * b[n, k]
        else:
            for n in range(cols):
                out[m, n] += a * b[k, n]
    return out

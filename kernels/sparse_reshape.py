"""SparseReshape: re-linearise each index row-major under the new dense shape (one -1 allowed).

As in TF, indices are not range-checked: they are re-linearised with C++ integer arithmetic
(division truncating toward zero, wrapping products) and passed through untouched when the shape
does not change. Only the shapes are validated.
"""
import numpy as np
from numba import njit

from .errors import multiply_sizes, set_error


@njit(cache=True, nogil=True)
def resolve_shape(input_shape, new_shape, err):
    """(output dense shape, input dense size) of reshaping ``input_shape`` to ``new_shape`` (one -1
    inferred), with TF's checks and messages; shared with the fused string bag."""
    in_rank = input_shape.shape[0]
    out_rank = new_shape.shape[0]
    out_shape = np.empty(out_rank, np.int64)
    dense_size = 1
    for d in range(in_rank):
        s = input_shape[d]
        if s < 0:
            set_error(err, "Expected shape dimensions to be non-negative, got ", s)
            return out_shape, dense_size
        grown = multiply_sizes(dense_size, s, err)
        if grown < 0:
            return out_shape, dense_size
        dense_size = grown
    product = 1  # of the given sizes, -1 counted as 1: the running size of TF's output shape
    unknown = -1
    for d in range(out_rank):
        s = new_shape[d]
        if s == -1:
            if unknown != -1:
                set_error(err, "only one output dimension may be -1, not both ", unknown, " and ", d)
                return out_shape, dense_size
            unknown = d
            s = 1
        elif s < 0:
            set_error(err, "size ", d, " must be non-negative, not ", s)
            return out_shape, dense_size
        grown = multiply_sizes(product, s, err)
        if grown < 0:
            return out_shape, dense_size
        product = grown
        out_shape[d] = s
    if unknown != -1:
        if product == 0:
            set_error(err, "reshape cannot infer the missing input size for an empty tensor unless all specified input sizes are non-zero")
            return out_shape, dense_size
        if dense_size % product != 0:
            set_error(err, "Input to reshape is a SparseTensor with ", dense_size,
                      " dense values, but the requested shape requires a multiple of ", product,
                      ". input_shape=", input_shape, " output_shape=", out_shape)
            return out_shape, dense_size
        out_shape[unknown] = dense_size // product
    elif product != dense_size:
        set_error(err, "Input to reshape is a tensor with ", dense_size,
                  " dense values, but the requested shape has ", product, ". input_shape=", input_shape,
                  " output_shape=", out_shape)
        return out_shape, dense_size
    return out_shape, dense_size


@njit(cache=True, nogil=True)
def sparse_reshape(indices, input_shape, new_shape, err):
    nnz = indices.shape[0]
    in_rank = input_shape.shape[0]
    out_rank = new_shape.shape[0]
    out_idx = np.empty((nnz, out_rank), np.int64)
    if indices.shape[1] != in_rank:
        set_error(err, "Input tensor rank must match input shape length.")
        return out_idx[:0], np.empty(out_rank, np.int64)
    out_shape, dense_size = resolve_shape(input_shape, new_shape, err)
    if err[0] != 0:
        return out_idx[:0], out_shape
    product = 1
    for d in range(out_rank):
        product *= out_shape[d]
    same = in_rank == out_rank
    for d in range(min(in_rank, out_rank)):
        same = same and input_shape[d] == out_shape[d]
    if same:  # feature columns reshape [B, k] to [B, k]: nothing moves (TF forwards its input)
        return indices.copy(), out_shape
    if nnz > 0 and (dense_size == 0 or product == 0):
        set_error(err, "Input tensor has ", nnz, " non zero elements but input shape (", input_shape,
                  ") or output shape (", out_shape, ") is empty")
        return out_idx[:0], out_shape
    in_strides = np.ones(in_rank, np.int64)
    for d in range(in_rank - 2, -1, -1):
        in_strides[d] = in_strides[d + 1] * input_shape[d + 1]
    out_strides = np.ones(out_rank, np.int64)
    for d in range(out_rank - 2, -1, -1):
        out_strides[d] = out_strides[d + 1] * out_shape[d + 1]
    for i in range(nnz):
        lin = 0
        for d in range(in_rank):
            lin += indices[i, d] * in_strides[d]
        for d in range(out_rank):
            st = out_strides[d]  # > 0: every output dim is non-zero here
            q = lin // st
            r = lin - q * st
            if r != 0 and lin < 0:  # C++ truncates toward zero where Python floors
                q += 1
                r -= st
            out_idx[i, d] = q
            lin = r
    return out_idx, out_shape

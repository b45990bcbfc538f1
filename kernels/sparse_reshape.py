"""SparseReshape: re-linearise each index row-major under the new dense shape (one -1 allowed)."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def sparse_reshape(indices, input_shape, new_shape, err):
    nnz = indices.shape[0]
    in_rank = input_shape.shape[0]
    out_rank = new_shape.shape[0]
    out_shape = np.empty(out_rank, np.int64)
    out_idx = np.empty((nnz, out_rank), np.int64)
    if indices.shape[1] != in_rank:
        set_error(err, "Input rank (" + str(in_rank) + ") and rank of input indices (" + str(indices.shape[1]) + ") don't match")
        return out_idx[:0], out_shape
    dense_size = 1
    for d in range(in_rank):
        if input_shape[d] < 0:
            set_error(err, "Input shape must be non-negative, got " + str(input_shape[d]))
            return out_idx[:0], out_shape
        # Guard against int64 overflow the way TF does (MultiplyWithoutOverflow).
        if input_shape[d] != 0 and dense_size > 9223372036854775807 // input_shape[d]:
            set_error(err, "Input shape is too large: product of dimensions overflows int64")
            return out_idx[:0], out_shape
        dense_size *= input_shape[d]
    product = 1
    unknown = -1
    for d in range(out_rank):
        s = new_shape[d]
        if s == -1:
            if unknown != -1:
                set_error(err, "only one output dimension may be -1, not both " + str(unknown) + " and " + str(d))
                return out_idx[:0], out_shape
            unknown = d
        elif s < 0:
            set_error(err, "size " + str(d) + " must be non-negative, not " + str(s))
            return out_idx[:0], out_shape
        else:
            if s != 0 and product > 9223372036854775807 // s:
                set_error(err, "Requested shape is too large: product of dimensions overflows int64")
                return out_idx[:0], out_shape
            product *= s
        out_shape[d] = s
    if unknown != -1:
        if product == 0 or dense_size % product != 0:
            set_error(err, "Input to reshape is a SparseTensor with " + str(dense_size) + " dense values, but the requested shape requires a multiple of " + str(product) + ". inputShape=" + str(input_shape) + " outputShape=" + str(out_shape))
            return out_idx[:0], out_shape
        out_shape[unknown] = dense_size // product
        product = dense_size
    if product != dense_size:
        set_error(err, "Input to reshape is a tensor with " + str(dense_size) + " dense values, but the requested shape has " + str(product) + ". inputShape=" + str(input_shape) + " outputShape=" + str(out_shape))
        return out_idx[:0], out_shape
    same = in_rank == out_rank
    for d in range(min(in_rank, out_rank)):
        same = same and input_shape[d] == out_shape[d]
    for i in range(nnz):
        for d in range(in_rank):
            if indices[i, d] < 0 or indices[i, d] >= input_shape[d]:
                set_error(err, "SparseReshape: index " + str(i) + " is out of bounds of the input shape")
                return out_idx[:0], out_shape
    if same:  # feature columns reshape [B, k] to [B, k]: nothing moves
        out_idx[:, :] = indices
        return out_idx, out_shape
    for i in range(nnz):
        lin = 0
        for d in range(in_rank):
            lin = lin * input_shape[d] + indices[i, d]
        for d in range(out_rank - 1, -1, -1):
            out_idx[i, d] = lin % out_shape[d]
            lin //= out_shape[d]
    return out_idx, out_shape

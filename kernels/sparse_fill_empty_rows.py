"""SparseFillEmptyRows: every row of the dense shape gets at least one entry (the default value).

Output order follows TensorFlow's CPU kernel exactly: rows in order, entries within a row in
their input order, an empty row's filler at that row's slot.
"""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def sparse_fill_empty_rows(indices, values, dense_shape, default_value, err):
    nnz = indices.shape[0]
    rank = indices.shape[1]
    dense_rows = dense_shape[0] if dense_shape.shape[0] > 0 else 0
    empty_out = (np.empty((0, rank), np.int64), values[:0].copy(), np.empty(0, np.bool_), np.empty(0, np.int64))
    if dense_shape.shape[0] == 0 or dense_shape.shape[0] != rank and nnz > 0:
        set_error(err, "SparseFillEmptyRows: dense_shape must be a non-empty vector matching the rank of indices")
        return empty_out
    if values.shape[0] != nnz:
        set_error(err, "SparseFillEmptyRows: values.shape[0] (" + str(values.shape[0]) + ") must match indices.shape[0] (" + str(nnz) + ")")
        return empty_out
    if dense_rows < 0:
        set_error(err, "SparseFillEmptyRows: dense_shape[0] must be non-negative, got " + str(dense_rows))
        return empty_out
    if dense_rows == 0:
        if nnz > 0:
            set_error(err, "Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = " + str(nnz))
        return empty_out
    ends = np.zeros(dense_rows, np.int64)
    ordered = True
    last = 0
    for i in range(nnz):
        row = indices[i, 0]
        if row < 0 or row >= dense_rows:
            set_error(err, "indices(" + str(i) + ", 0) is invalid: " + str(row) + (" < 0" if row < 0 else " >= " + str(dense_rows)))
            return empty_out
        ends[row] += 1
        if row < last:
            ordered = False
        last = row
    empty_rows = np.empty(dense_rows, np.bool_)
    any_empty = False
    total = 0
    for r in range(dense_rows):
        empty_rows[r] = ends[r] == 0
        any_empty = any_empty or ends[r] == 0
        total += max(ends[r], 1)
        ends[r] = total
    reverse = np.empty(nnz, np.int64)
    if ordered and not any_empty:
        for i in range(nnz):
            reverse[i] = i
        return indices.copy(), values.copy(), empty_rows, reverse
    out_idx = np.zeros((total, rank), np.int64)
    out_val = np.empty(total, values.dtype)
    filled = np.zeros(dense_rows, np.int64)
    for i in range(nnz):
        row = indices[i, 0]
        start = ends[row - 1] if row > 0 else 0
        off = start + filled[row]
        filled[row] += 1
        out_idx[off, :] = indices[i, :]
        out_val[off] = values[i]
        reverse[i] = off
    for r in range(dense_rows):
        if filled[r] == 0:
            start = ends[r - 1] if r > 0 else 0
            out_idx[start, 0] = r
            out_val[start] = default_value[0]
    return out_idx, out_val, empty_rows, reverse

"""SparseFillEmptyRows: every row of the dense shape gets at least one entry (the default value).

Output order follows TensorFlow's CPU kernel exactly: rows in order, entries within a row in
their input order, an empty row's filler at that row's slot.
"""
import numpy as np
from numba import njit

from .errors import OOM_PREFIX, set_error


@njit(cache=True, nogil=True)
def _nothing(rank, values):
    """The four outputs, empty: what an error (or a dense shape with no rows) returns."""
    return np.empty((0, rank), np.int64), values[:0].copy(), np.empty(0, np.bool_), np.empty(0, np.int64)


@njit(cache=True, nogil=True)
def checked_rows(nnz, rank, n_values, dense_shape, err):
    """SparseFillEmptyRows' shape checks, in its order, for ``nnz`` x ``rank`` indices and
    ``n_values`` values: the dense shape's rows, or -1 (err set)."""
    if n_values != nnz:
        set_error(err, "The length of `values` (", n_values, ") must match the first dimension of `indices` (",
                  nnz, ").")
        return -1
    if dense_shape.shape[0] != rank:
        set_error(err, "The length of `dense_shape` (", dense_shape.shape[0],
                  ") must match the second dimension of `indices` (", rank, ").")
        return -1
    if dense_shape.shape[0] == 0:
        set_error(err, "Dense shape cannot be empty.")
        return -1
    dense_rows = dense_shape[0]
    if dense_rows < 0:
        set_error(err, "Expected shape dimensions to be non-negative, got ", dense_rows)
        return -1
    if dense_rows == 0 and nnz > 0:
        set_error(err, "Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = ", nnz)
        return -1
    return dense_rows


@njit(cache=True, nogil=True)
def sparse_fill_empty_rows(indices, values, dense_shape, default_value, err):
    nnz = indices.shape[0]
    rank = indices.shape[1]
    dense_rows = checked_rows(nnz, rank, values.shape[0], dense_shape, err)
    if dense_rows <= 0:
        return _nothing(rank, values)
    try:  # dense_shape[0] is data: it may ask for more than can be allocated
        start = np.zeros(dense_rows, np.int64)
        empty_rows = np.empty(dense_rows, np.bool_)
    except Exception:
        set_error(err, OOM_PREFIX, " tensor with shape[", dense_rows, "] and type bool")
        return _nothing(rank, values)
    # Count each row's entries (validating the row indices), then turn counts into start offsets.
    ordered = True
    last = 0
    for i in range(nnz):
        row = indices[i, 0]
        if row < 0 or row >= dense_rows:
            set_error(err, "indices(", i, ", 0) is invalid: ", row, " >= ", dense_rows)
            return _nothing(rank, values)
        start[row] += 1
        ordered = ordered and row >= last
        last = row
    any_empty = False
    total = 0
    for r in range(dense_rows):
        count = start[r]
        empty_rows[r] = count == 0
        any_empty = any_empty or count == 0
        start[r] = total
        total += max(count, 1)
    reverse = np.empty(nnz, np.int64)
    if ordered and not any_empty:
        for i in range(nnz):
            reverse[i] = i
        return indices.copy(), values.copy(), empty_rows, reverse
    out_idx = np.empty((total, rank), np.int64)
    out_val = np.empty(total, values.dtype)
    filler = default_value[0]
    for r in range(dense_rows):
        if empty_rows[r]:
            s = start[r]
            out_idx[s, 0] = r
            for d in range(1, rank):
                out_idx[s, d] = 0
            out_val[s] = filler
    # Entries go to their row's next free slot, so each row keeps its input order.
    # Explicit scalar loops: Numba slice assignment costs ~10 ns a call.
    for i in range(nnz):
        row = indices[i, 0]
        off = start[row]
        start[row] = off + 1
        for d in range(rank):
            out_idx[off, d] = indices[i, d]
        out_val[off] = values[i]
        reverse[i] = off
    return out_idx, out_val, empty_rows, reverse

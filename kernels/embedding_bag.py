"""Embedding bag: the whole embedding_lookup_sparse tail of a feature column in one pass.

Replaces SparseFillEmptyRows -> Unique -> (Resource)Gather -> SparseSegment{Sum,Mean,SqrtN} ->
Select(empty rows, 0): out[r] = reduce(table[values[i]] for the entries i of row r), entries in
input order, empty rows zero. Rows are combined by SparseSegment*'s own ``reduce_runs`` (TF's
order), so results are bit-identical; nothing in between is materialised. ``mode``: 0 sum,
1 mean, 2 sqrtn.
"""
import numpy as np
from numba import njit

from .errors import out_of_memory, set_error
from .sparse_segment_reduction import reduce_runs


@njit(cache=True, nogil=True)
def embedding_bag(indices, values, dense_shape, table, mode, err):
    nnz = indices.shape[0]
    rank = indices.shape[1]
    width = table.shape[1]
    n_table = table.shape[0]
    empty = np.zeros((0, width), table.dtype)
    # SparseFillEmptyRows' checks, in its order.
    if dense_shape.shape[0] != rank:
        set_error(err, "SparseFillEmptyRows: dense_shape ", dense_shape, " does not match the rank of indices (",
                  rank, ")")
        return empty
    if values.shape[0] != nnz:
        set_error(err, "SparseFillEmptyRows: values.shape[0] (", values.shape[0], ") must match indices.shape[0] (",
                  nnz, ")")
        return empty
    rows = dense_shape[0] if rank > 0 else 0
    if rows < 0:
        set_error(err, "SparseFillEmptyRows: dense_shape[0] must be non-negative, got ", rows)
        return empty
    if rows == 0:
        if nnz > 0:
            set_error(err, "Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = ", nnz)
        return empty
    try:  # dense_shape is data: it may ask for more rows than can be allocated
        counts = np.zeros(rows + 1, np.int64)
        out = np.zeros((rows, width), table.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, width), np.int64))
        return empty
    for i in range(nnz):
        row = indices[i, 0]
        if row < 0 or row >= rows:  # TF's words for a negative row too: "-1 >= 3"
            set_error(err, "indices(", i, ", 0) is invalid: ", row, " >= ", rows)
            return empty
        v = values[i]
        if v < 0 or v >= n_table:  # what the gather from the table would reject
            set_error(err, "indices[", i, "] = ", v, " is not in [0, ", n_table, ")")
            return empty
        counts[row + 1] += 1
    for r in range(rows):
        if counts[r + 1] == 0 and n_table == 0:  # an empty row gathers the default id 0
            set_error(err, "indices[0] = 0 is not in [0, 0)")
            return empty
        counts[r + 1] += counts[r]
    # Stable counting sort: entries of a row keep their input order, as SparseFillEmptyRows does.
    order = np.empty(nnz, np.int64)
    fill = counts[:rows].copy()
    for i in range(nnz):
        row = indices[i, 0]
        order[fill[row]] = values[i]
        fill[row] += 1
    reduce_runs(table, order, counts, np.arange(rows), mode, out, np.int64(0))  # empty rows stay zero
    return out

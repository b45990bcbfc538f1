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
from .sparse_fill_empty_rows import checked_rows
from .sparse_segment_reduction import reduce_runs


@njit(cache=True, nogil=True)
def rows_of_entries(indices, values, n_weights, dense_shape, table, err):
    """SparseFillEmptyRows' checks in its order (of the ids ``values``, then of ``n_weights``
    weights where a weighted chain fills those too), then the table gather's on every id:
    (``out``: [rows, width] zeros of the table's dtype, ``counts``, ``order``, ``positions``): the
    entries of row r are positions[counts[r]:counts[r + 1]], in input order, as SparseFillEmptyRows
    keeps them, and ``order`` holds their ids. ``out`` is empty on an error (err set) and when there
    are no rows."""
    nnz = indices.shape[0]
    rank = indices.shape[1]
    width = table.shape[1]
    n_table = table.shape[0]
    empty = (np.zeros((0, width), table.dtype), np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    rows = checked_rows(nnz, rank, values.shape[0], dense_shape, err)
    if rows >= 0 and n_weights != nnz:  # the weights' fill: its other checks are the ids' fill's
        rows = checked_rows(nnz, rank, n_weights, dense_shape, err)
    if rows <= 0:
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
        counts[row + 1] += 1
    for i in range(nnz):  # the gather runs after the fill: its error comes second
        v = values[i]
        if v < 0 or v >= n_table:
            set_error(err, "indices[", i, "] = ", v, " is not in [0, ", n_table, ")")
            return empty
    for r in range(rows):
        if counts[r + 1] == 0 and n_table == 0:  # an empty row gathers the default id 0
            set_error(err, "indices[0] = 0 is not in [0, 0)")
            return empty
        counts[r + 1] += counts[r]
    # Stable counting sort: entries of a row keep their input order, as SparseFillEmptyRows does.
    order, positions = np.empty(nnz, np.int64), np.empty(nnz, np.int64)
    fill = counts[:rows].copy()
    for i in range(nnz):
        row = indices[i, 0]
        order[fill[row]], positions[fill[row]] = values[i], i
        fill[row] += 1
    return out, counts, order, positions


@njit(cache=True, nogil=True)
def embedding_bag(indices, values, dense_shape, table, mode, err):
    out, counts, order, _ = rows_of_entries(indices, values, values.shape[0], dense_shape, table, err)
    if out.shape[0] == 0:
        return out
    reduce_runs(table, order, counts, np.arange(out.shape[0]), mode, out, np.int64(0))  # empty rows stay zero
    return out

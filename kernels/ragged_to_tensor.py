"""RaggedTensorToTensor of one ragged dimension (``RaggedTensor.to_tensor``: a split tags field
padded or cut to a fixed width, a history's embeddings padded to [rows, length, dim]): TF's checks
and placement, then a [rows, width, ...] tensor with the scalar ``default`` where a row has no
value. Values of any rank; strings as a vector.

The rows come as ROW_SPLITS (``first_dim_size`` empty) or, as ``tf.strings.split`` makes them, as
FIRST_DIM_SIZE plus VALUE_ROWIDS (``first_dim_size`` the row count, shape (1,)).

TF's kernel first gives each value a target cell (or none, past the width or the rows), then
writes the output front to back with a cursor: a value goes to its cell, or to the cursor where its
cell lies behind it (rows out of order), and the skipped cells get ``default``. ``dense_places``
follows that to the cell. Where TF would read values past their end (a value with a cell is
missing), write past its output (value_rowids out of order) or abort, this raises an
InvalidArgumentError instead, its message starting "tf_blade:".
"""
import numpy as np
from numba import njit

from .errors import int_text, out_of_memory, set_error
from .fill import checked_dims
from .strings import put_view, string_at, string_at_outlined


@njit(cache=True, nogil=True, inline="always")
def _row_length(splits, i):
    """splits[i + 1] - splits[i] in the splits' own type, as TF computes it (int32 wraps)."""
    length = np.int64(splits[i + 1]) - np.int64(splits[i])
    return np.int64(np.int32(length)) if splits.itemsize == 4 else length


@njit(cache=True, nogil=True)
def _widest_split_row(splits):
    widest = 0
    for i in range(splits.shape[0] - 1):
        widest = max(widest, _row_length(splits, i))
    return widest


@njit(cache=True, nogil=True)
def _longest_run(rowids):
    """TF's width for value_rowids: the longest run of equal neighbours (sorted or not)."""
    widest, start = 0, 0
    for i in range(1, rowids.shape[0]):
        if rowids[i] != rowids[i - 1]:
            widest = max(widest, i - start)
            start = i
    return max(widest, rowids.shape[0] - start)


@njit(cache=True, nogil=True)
def _missing_value(err, k, n_values):
    set_error(err, "tf_blade: value ", k, " has a cell but there are only ", n_values,
              " values (TF reads past their end)")


@njit(cache=True, nogil=True)
def _places_of_splits(splits, rows, width, n_values, err):
    """Cells of the values from ROW_SPLITS (TF's CalculateOutputIndexRowSplit): row i's first
    ``width`` values, for rows below ``rows``. A row of negative length takes none; splits[0] is
    not checked, the total is. The cells only grow, so TF's write order changes nothing here."""
    total = 0
    for i in range(splits.shape[0] - 1):
        total += max(_row_length(splits, i), 0)
    if total != splits[splits.shape[0] - 1]:
        set_error(err, "Invalid row split size.")
        return np.zeros(0, np.int64)
    places = np.full(min(total, n_values), -1, np.int64)  # values past the end are checked, not kept
    k = 0
    for i in range(splits.shape[0] - 1):
        length = max(_row_length(splits, i), 0)
        placed = min(length, width) if i < rows else 0
        if k + placed > n_values:
            _missing_value(err, max(k, n_values), n_values)
            return places
        for j in range(placed):
            places[k + j] = i * width + j
        k += length
    return places


@njit(cache=True, nogil=True)
def _places_of_rowids(rowids, first, rows, width, cells, n_values, err):
    """Cells of the values from VALUE_ROWIDS (TF's CalculateOutputIndexValueRowID: the column
    restarts wherever the row id changes), then moved as TF writes them: front to back, a value
    whose cell lies behind the last one written (ids out of order) goes to the next cell instead,
    which may lie in the padding rows, as long as it is one of the output's ``cells``."""
    places = np.full(rowids.shape[0], -1, np.int64)
    target, column, cursor = -1, 0, 0
    for k in range(rowids.shape[0]):
        r = np.int64(rowids[k])
        if k == 0 or r != rowids[k - 1]:
            if r < 0 or r >= first:  # TF compares as unsigned: a negative id fails too
                set_error(err, "Got current_value_rowid=" if k == 0 else "Got next_value_rowid=", r,
                          " which is not less than ", first)
                return places
            target = r * width if r < rows else -1
            column = 0
        elif target >= 0:
            column += 1
            target = target + 1 if column < width else -1
        if target < 0:
            continue
        if k >= n_values:
            _missing_value(err, k, n_values)
            return places
        places[k] = max(cursor, target)
        if places[k] >= cells:
            set_error(err, "tf_blade: value_rowids out of order leave value ", k,
                      " no cell (TF writes past its output)")
            return places
        cursor = places[k] + 1
    return places


@njit(cache=True, nogil=True)
def _partial_dims_text(dims):
    """A requested shape as TF prints a partial one: "[?,5,16]"."""
    text = "["
    for i in range(dims.shape[0]):
        text += ("," if i > 0 else "") + ("?" if dims[i] == -1 else int_text(dims[i]))
    return text + "]"


@njit(cache=True, nogil=True)
def dense_places(partition, first_dim_size, requested, value_shape, err):
    """(places, dims): the output's dims, and the row of [rows * width, ...] each value goes to
    (-1: cut off; values the partition does not cover are not listed). ``requested``: the shape
    asked for, -1 where TF is to find it (rows: the row count; width: the longest row; inner dims:
    the values'). On error places is empty and dims zeros."""
    none, dims = np.zeros(0, np.int64), np.zeros(requested.shape[0], np.int64)
    by_rowids = first_dim_size.shape[0] == 1
    if not by_rowids and partition.shape[0] == 0:
        set_error(err, "Invalid first partition input. Tensor requires at least one element.")
        return none, dims
    first = np.int64(first_dim_size[0]) if by_rowids else np.int64(partition.shape[0] - 1)
    for i in range(2, requested.shape[0]):
        if requested[i] != -1 and requested[i] != value_shape[i - 1]:
            set_error(err, "rt_input.shape and shape=", _partial_dims_text(requested),
                      " are incompatible: rt_input.shape[", i, "] = ", value_shape[i - 1], " but shape[",
                      i, "] = ", requested[i])
            return none, dims
        dims[i] = value_shape[i - 1]
    dims[0] = requested[0] if requested[0] >= 0 else first
    if requested[1] >= 0:
        dims[1] = requested[1]
    else:
        dims[1] = _longest_run(partition) if by_rowids else _widest_split_row(partition)
    checked_dims(dims, err)  # MakeShape: no negative dim, no overflow
    if err[0] != 0:
        return none, np.zeros(requested.shape[0], np.int64)
    for i in range(dims.shape[0]):
        if dims[i] == 0:  # an empty output: TF checks nothing more
            return none, dims
    if first < 0:
        set_error(err, "tf_blade: a row count of ", first, " with the rows asked for (TF aborts)")
        return none, np.zeros(requested.shape[0], np.int64)
    rows, width, n_values = min(dims[0], first), dims[1], value_shape[0]
    if by_rowids:
        places = _places_of_rowids(partition, first, rows, width, dims[0] * dims[1], n_values, err)
    else:
        places = _places_of_splits(partition, rows, width, n_values, err)
    if err[0] != 0:
        return none, np.zeros(requested.shape[0], np.int64)
    return places, dims


@njit(cache=True, nogil=True)
def ragged_to_tensor(partition, first_dim_size, requested, values, default, err):
    """The [rows, width, *values.shape[1:]] tensor of numeric ``values`` and the scalar ``default``."""
    value_shape = np.array(values.shape, np.int64)
    places, dims = dense_places(partition, first_dim_size, requested, value_shape, err)
    element = 1
    for i in range(1, value_shape.shape[0]):
        element *= value_shape[i]
    try:  # the row count is data: it may ask for more than can be allocated
        out = np.full((dims[0] * dims[1], element), default[0], values.dtype)
    except Exception:
        out_of_memory(err, dims)
        return np.full((0, element), default[0], values.dtype).reshape((0, 0) + values.shape[1:])
    flat = np.ascontiguousarray(values).reshape((values.shape[0], element))
    for k in range(places.shape[0]):
        if places[k] >= 0:
            for j in range(element):
                out[places[k], j] = flat[k, j]
    return out.reshape((dims[0], dims[1]) + values.shape[1:])


@njit(cache=True, nogil=True)
def ragged_to_tensor_strings(partition, first_dim_size, requested, ids, offsets, data, default_ids,
                             default_offsets, default_data, err):
    """(ids [rows, width], tstrings): strings ``ids`` (a vector) laid out as ragged_to_tensor lays
    out numbers. The tstrings are VIEWs of the values (the ones placed) and, last, of the default:
    the caller keeps their owners alive."""
    places, dims = dense_places(partition, first_dim_size, requested, np.array(ids.shape, np.int64), err)
    if err[0] != 0:
        return np.zeros((0, 0), np.int64), np.zeros(0, np.uint8)
    m = places.shape[0]
    try:  # the row count is data: it may ask for more than can be allocated
        out = np.full(dims[0] * dims[1], m, np.int64)
    except Exception:
        out_of_memory(err, dims)
        return np.zeros((0, 0), np.int64), np.zeros(0, np.uint8)
    words = np.zeros(3 * (m + 1), np.uint64)  # unplaced values stay empty SMALL strings
    for k in range(m):
        if places[k] >= 0:
            buf, start, size = string_at(offsets, data, ids[k])
            put_view(words, k, buf, start, start + size)
            out[places[k]] = k
    buf, start, size = string_at_outlined(default_offsets, default_data, default_ids[0])
    put_view(words, m, buf, start, start + size)
    return out.reshape((dims[0], dims[1])), words.view(np.uint8)

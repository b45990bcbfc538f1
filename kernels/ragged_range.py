"""RaggedRange(starts, limits, deltas) -> (row splits, values), TF's sizes and values.

A row's size is computed in the inputs' own type as TF does (integers: ceil(|limit - start| /
|delta|) with the subtraction wrapping; floats: ceil(|(limit - start) / delta|)), and its values
by repeated addition (value += delta), not start + i * delta as Range. Sizes that wrap negative
or splits that overflow their type are refused with an error: TF would compute a wrong split
there, or fail a check and abort.
"""
import numpy as np
from numba import njit

from .errors import out_of_memory, set_error


@njit(cache=True, nogil=True)
def _row_size(start, limit, delta, is_float, one):
    """The row's size in TF's arithmetic, or -1 when that size is not an int64. ``one``: three
    elements of the inputs' type, in which every step rounds, or wraps, as TF's."""
    if (delta > 0 and limit < start) or (delta < 0 and limit > start):
        return np.int64(0)
    if is_float:
        one[0] = limit - start
        one[0] = one[0] / delta
        q = np.ceil(np.abs(one[0]))
        if not q < 9.223372036854775807e18:
            return np.int64(-1)
        return np.int64(q)
    one[0] = limit - start
    one[1] = abs(one[0])
    one[2] = abs(delta)
    span, step = np.int64(one[1]), np.int64(one[2])
    if span < 0 or step < 0:  # |most negative value| wraps
        return np.int64(-1)
    one[0] = span + step - 1  # Eigen::divup in the inputs' type
    if one[0] < 0:
        return np.int64(-1)
    return np.int64(one[0]) // step


@njit(cache=True, nogil=True)
def ragged_range(starts, limits, deltas, scalar_starts, scalar_limits, scalar_deltas, splits_like, is_float, err):
    """``starts``, ``limits``, ``deltas``: vectors, a scalar input (shared by every row) as one
    element with its ``scalar_*`` flag set; ``splits_like``: an empty array of the splits' dtype."""
    broadcast = (scalar_starts, scalar_limits, scalar_deltas)
    sizes = np.empty(3, np.int64)
    sizes[0], sizes[1], sizes[2] = starts.shape[0], limits.shape[0], deltas.shape[0]
    nrows = -1
    for i in range(3):
        if not broadcast[i]:
            if nrows >= 0 and sizes[i] != nrows:
                set_error(err, "starts, limits, and deltas must have the same shape")
                return np.zeros(1, splits_like.dtype), np.empty(0, starts.dtype)
            nrows = sizes[i]
    if nrows < 0:  # every input a scalar: one row
        nrows = 1
    limit_of_splits = np.int64(np.iinfo(splits_like.dtype).max)
    splits = np.zeros(nrows + 1, splits_like.dtype)
    total = np.int64(0)
    scratch = np.empty(3, starts.dtype)
    for row in range(nrows):
        start = starts[0 if broadcast[0] else row]
        limit = limits[0 if broadcast[1] else row]
        delta = deltas[0 if broadcast[2] else row]
        if delta == 0:
            set_error(err, "Requires delta != 0")
            return splits, np.empty(0, starts.dtype)
        size = _row_size(start, limit, delta, is_float, scratch)
        if size < 0 and is_float:
            set_error(err, "Requires ((limit - start) / delta) <= 9223372036854775807")
            return splits, np.empty(0, starts.dtype)
        if size < 0 or size > limit_of_splits - total:
            set_error(err, "RaggedRange: the output size overflows its row splits' type")
            return splits, np.empty(0, starts.dtype)
        total += size
        splits[row + 1] = total
    try:
        values = np.empty(total, starts.dtype)
    except Exception:
        out_of_memory(err, np.array((total,), np.int64))
        return splits, np.empty(0, starts.dtype)
    value = np.empty(1, starts.dtype)
    at = 0
    for row in range(nrows):
        value[0] = starts[0 if broadcast[0] else row]
        delta = deltas[0 if broadcast[2] else row]
        for i in range(splits[row + 1] - splits[row]):
            values[at] = value[0]
            value[0] += delta
            at += 1
    return splits, values

"""DenseBincount (tf.math.bincount with axis=-1; Keras CategoryEncoding, multi-hot/count/one-hot
lookups, HashedCrossing one-hot): counts, or summed weights, of each value below ``size``.

Checks in TF's order: weights the shape of the input (or empty), size >= 0, then no negative
value (a matrix: TF's 32-bit rule, bincount_rows). Values >= size are ignored. A matrix input
counts per row; a row's values add in column order, as TF's do (bit-identical). A vector input
adds in input order; TF splits large vectors across threads and sums the partial bins, so float
weights there agree within rounding.
"""
import numpy as np
from numba import njit

from .errors import out_of_memory, set_error


@njit(cache=True, nogil=True)
def _checks(weights_size, same_shape, weights_shape, size, err):
    if weights_size != 0 and not same_shape:
        set_error(err, "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which case it acts as all weights equal to 1. Received ",
                  weights_shape)
        return False
    if size < 0:
        set_error(err, "size (", size, ") must be non-negative")
        return False
    return True


@njit(cache=True, nogil=True)
def _allocate(shape, empty, err):
    try:  # size is data: it may ask for more than can be allocated
        return np.zeros(shape, empty.dtype), True
    except Exception:
        out_of_memory(err, shape)
        return empty, False


@njit(cache=True, nogil=True)
def bincount_vector(values, size, weights, same_shape, weights_shape, binary, example, err):
    """``values``: a vector; returns [size]."""
    if not _checks(weights.size, same_shape, weights_shape, size, err):
        return np.zeros(0, example.dtype)
    for i in range(values.shape[0]):
        if values[i] < 0:
            set_error(err, "Input arr must be non-negative!")
            return np.zeros(0, example.dtype)
    out, ok = _allocate((np.int64(size),), np.zeros(0, example.dtype), err)
    if not ok:
        return out
    w = weights.ravel()
    for i in range(values.shape[0]):
        v = values[i]
        if v < size:
            if binary:
                out[v] = 1
            elif w.shape[0]:
                out[v] += w[i]
            else:
                out[v] += 1
    return out


@njit(cache=True, nogil=True)
def bincount_rows(values, size, weights, same_shape, weights_shape, binary, example, err):
    """``values``: [rows, n]; returns [rows, size], each row counted on its own."""
    if not _checks(weights.size, same_shape, weights_shape, size, err):
        return np.zeros((0, 0), example.dtype)
    rows, n = values.shape
    # TF keeps the last negative value it meets in an int (32 bits) and raises only when that is
    # negative, naming it: [[-1, -2]] names -2, and [[-1, -2**32]] (kept as 0) counts the rest.
    # Negative values are skipped either way. (TF's threads split the rows, so with negatives in
    # far-apart rows TF's "last" varies; this is its order on one thread.)
    last_negative = np.int32(0)
    for r in range(rows):
        for j in range(n):
            if values[r, j] < 0:
                last_negative = np.int32(values[r, j])
    if last_negative < 0:
        set_error(err, "Input 'in' must be non-negative! Negative input value found: ", last_negative)
        return np.zeros((0, 0), example.dtype)
    out, ok = _allocate((np.int64(rows), np.int64(size)), np.zeros((0, 0), example.dtype), err)
    if not ok:
        return out
    w = weights.ravel()
    for r in range(rows):
        for j in range(n):
            v = values[r, j]
            if 0 <= v < size:
                if binary:
                    out[r, v] = 1
                elif w.shape[0]:
                    out[r, v] += w[r * n + j]
                else:
                    out[r, v] += 1
    return out


@njit(cache=True, nogil=True)
def bincount_ragged(splits, values, size, weights, binary, example, err):
    """RaggedBincount (a ragged input's multi-hot or counts: Keras StringLookup/IntegerLookup
    over a split field): row r counts values[splits[r]:splits[r + 1]]; returns [rows, size].
    TF's checks and its way of finding a value's row (the first split above it, which is also
    what non-monotonic splits get). Weights longer than the values are read only as far as the
    values go, and not at all for binary output, as TF's; shorter ones TF reads past their end:
    here that is an error."""
    empty = np.zeros((0, 0), example.dtype)
    if size < 0:
        set_error(err, "size (", size, ") must be non-negative")
        return empty
    if splits.shape[0] == 0:
        set_error(err, "Splits must be non-empty")
        return empty
    n = values.shape[0]
    rows = splits.shape[0] - 1
    if splits[0] != 0:
        set_error(err, "Splits must start with 0, not with ", splits[0])
        return empty
    if splits[rows] != n:
        set_error(err, "Splits must end with the number of values, got ", splits[rows], " instead of ", n)
        return empty
    if not binary and weights.size != 0 and weights.size < n:
        set_error(err, "tf_blade: RaggedBincount weights must have at least one value per input value (", n,
                  ") or none, got ", weights.size, " (TF reads past their end)")
        return empty
    out, ok = _allocate((np.int64(rows), np.int64(size)), empty, err)
    if not ok:
        return out
    w = weights.ravel()
    row = 0
    for i in range(n):
        while i >= splits[row]:  # stops at rows at the latest: splits[rows] == n > i
            row += 1
        v = values[i]
        if v < 0:
            set_error(err, "Input must be non-negative")
            return empty
        if v < size:
            if binary:
                out[row - 1, v] = 1
            elif w.shape[0]:
                out[row - 1, v] += w[i]
            else:
                out[row - 1, v] += 1
    return out

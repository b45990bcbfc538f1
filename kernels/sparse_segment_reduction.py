"""SparseSegmentSum / Mean / SqrtN: out[s] = reduce(data[indices[i]] for i with segment_ids[i] == s).

Rows are combined in TensorFlow's CPU order so float results match TF bit for bit: a segment of
fewer than 10 rows is summed left to right and multiplied by 1/n (or 1/sqrt(n)); a longer one
starts with its first ``n % 8`` rows (8 or 9 when that is 0 or 1), then adds blocks of eight
(each block summed first) and is divided by n (or sqrt(n)) at the end.
"""
import numpy as np
from numba import njit

from .errors import set_error

SUM, MEAN, SQRTN = 0, 1, 2


@njit(cache=True, nogil=True)
def _reduce_segment(data, indices, start, num, mode, out_row, tmp):
    out_row[:] = data[indices[start]]
    if num == 1:
        return
    r = num & 7
    if r < 2:
        r += 8
    for k in range(1, r):
        out_row += data[indices[start + k]]
    one = _scalar_like(out_row, 1.0)
    count = _scalar_like(out_row, num)
    root = _scalar_like(out_row, np.sqrt(np.float64(num)))
    if num < 10:
        if mode == MEAN:
            out_row *= one / count
        elif mode == SQRTN:
            out_row *= one / root
        return
    for b in range(r, num, 8):
        tmp[:] = data[indices[start + b]]
        for k in range(1, 8):
            tmp += data[indices[start + b + k]]
        out_row += tmp
    if mode == MEAN:
        out_row /= count
    elif mode == SQRTN:
        out_row /= root


@njit(cache=True, nogil=True)
def _scalar_like(row, value):
    """``value`` converted to the row's dtype (Numba would otherwise compute in float64)."""
    v = np.empty(1, row.dtype)
    v[0] = value
    return v[0]


@njit(cache=True, nogil=True)
def sparse_segment_reduce(data, indices, segment_ids, num_segments, mode, err):
    """``num_segments`` < 0 means "last segment id + 1" (the op without WithNumSegments)."""
    d = np.ascontiguousarray(data)
    n_rows = d.shape[0]
    width = 1
    for k in range(1, d.ndim):
        width *= d.shape[k]
    flat = d.reshape((n_rows, width))
    n = indices.shape[0]
    empty = np.zeros((0, width), d.dtype)
    if segment_ids.shape[0] != n:
        set_error(err, "segment_ids and indices should have same size.")
        return empty
    if num_segments < 0:
        num_segments = segment_ids[n - 1] + 1 if n > 0 else 0
    if n > 0 and segment_ids[0] < 0:
        set_error(err, "segment ids must be >= 0")
        return empty
    last = 0
    for i in range(n):
        s = segment_ids[i]
        if s < last:
            set_error(err, "segment ids are not increasing")
            return empty
        if s >= num_segments:
            set_error(err, "Segment id " + str(s) + " out of range [0, " + str(num_segments) + "), possibly because 'segment_ids' input is not sorted.")
            return empty
        last = s
        j = indices[i]
        if j < 0 or j >= n_rows:
            set_error(err, "Bad: indices[" + str(i) + "] == " + str(j) + " out of range [0, " + str(n_rows) + ")")
            return empty
    out = np.zeros((num_segments, width), d.dtype)
    tmp = np.empty(width, d.dtype)
    start = 0
    while start < n:
        seg = segment_ids[start]
        end = start + 1
        while end < n and segment_ids[end] == seg:
            end += 1
        num = end - start
        _reduce_segment(flat, indices, start, num, mode, out[seg], tmp)
        start = end
    return out

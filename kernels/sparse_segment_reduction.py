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
def _reduce_segments(flat, indices, segment_ids, out, mode):
    """One pass over the (validated) segments. Written as a single loop nest on purpose: a helper
    call per segment made this 6x slower (Numba passes and refcounts every array argument)."""
    n = indices.shape[0]
    width = flat.shape[1]
    tmp = np.empty(width, flat.dtype)
    scalar = np.empty(1, flat.dtype)  # rounds n and sqrt(n) to the data's precision, as static_cast<T>
    start = 0
    while start < n:
        seg = segment_ids[start]
        end = start + 1
        while end < n and segment_ids[end] == seg:
            end += 1
        num = end - start
        first = indices[start]
        for c in range(width):
            out[seg, c] = flat[first, c]
        if num > 1:
            r = num & 7
            if r < 2:
                r += 8
            for k in range(start + 1, start + r):
                row = indices[k]
                for c in range(width):
                    out[seg, c] += flat[row, c]
            for b in range(start + r, end, 8):
                first = indices[b]
                for c in range(width):
                    tmp[c] = flat[first, c]
                for k in range(b + 1, b + 8):
                    row = indices[k]
                    for c in range(width):
                        tmp[c] += flat[row, c]
                for c in range(width):
                    out[seg, c] += tmp[c]
            if mode != SUM:
                scalar[0] = num if mode == MEAN else np.sqrt(np.float64(num))
                if num < 10:  # TF scales the first (only) block by 1/n, longer segments divide
                    scalar[0] = 1 / scalar[0]
                    s = scalar[0]
                    for c in range(width):
                        out[seg, c] *= s
                else:
                    s = scalar[0]
                    for c in range(width):
                        out[seg, c] /= s
        start = end


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
    _reduce_segments(flat, indices, segment_ids, out, mode)
    return out

"""SparseSegmentSum / Mean / SqrtN: out[s] = reduce(data[indices[i]] for i with segment_ids[i] == s).

Rows are combined in TensorFlow's CPU order so float results match TF bit for bit: a segment of
fewer than 10 rows is summed left to right and multiplied by 1/n (or 1/sqrt(n)); a longer one
starts with its first ``n % 8`` rows (8 or 9 when that is 0 or 1), then adds blocks of eight
(each block summed first) and is divided by n (or sqrt(n)) at the end.
"""
import numpy as np
from numba import njit

from .errors import INT64_MAX, out_of_memory, set_error
from .prefetch import PREFETCH_IDS, prefetch_row
from .row_lanes import LANES, pool_lanes, pool_run_lanes

SUM, MEAN, SQRTN = 0, 1, 2
NO_NUM_SEGMENTS = -(1 << 62)  # num_segments for the ops without it (TF reads it as int32, so
                              # every real value, -1 included, lies far from this one)


@njit(cache=True, nogil=True)
def reduce_runs(data, rows, starts, targets, mode, out, column):
    """out[targets[q], column:column + width] = reduce(data[rows[k]] for k in starts[q]..starts[q+1]-1),
    for every run q, in TF's order. Shared by SparseSegment* and the fused embedding bags (a
    feature layer's column starts at ``column`` of its output). One loop nest on purpose: a helper
    call per run made this 6x slower (Numba passes and refcounts every array). Rows are added
    LANES elements at a time (row_lanes.py): runs of up to 4 rows (most multi-hot rows) by
    pool_lanes, longer ones by pool_run_lanes, each summed in registers and stored once; the last
    width % LANES elements one at a time. ``out`` is C-ordered."""
    data = np.ascontiguousarray(data)  # the lanes read rows as vectors (no copy of a C-ordered table)
    width = data.shape[1]
    lanes_end = width - width % LANES
    scalar = np.empty(1, data.dtype)  # rounds n and sqrt(n) to the data's precision, as static_cast<T>
    ahead = starts[0]  # rows before this one have been prefetched (prefetch.py)
    last = starts[targets.shape[0]]
    for q in range(targets.shape[0]):
        start = starts[q]
        end = starts[q + 1]
        num = end - start
        while ahead < min(end + PREFETCH_IDS, last):
            prefetch_row(data, rows[ahead])
            ahead += 1
        if num == 0:
            continue
        first = rows[start]
        seg = targets[q]
        if num == 1:  # a row alone is itself (TF scales only longer segments)
            for c0 in range(0, lanes_end, LANES):
                pool_lanes(out, seg, column + c0, data, first, first, first, first, 1, 1.0, c0)
            for c in range(lanes_end, width):
                out[seg, column + c] = data[first, c]
            continue
        if mode == SUM:
            scalar[0] = 1  # exact: x * 1 is x for a sum of two or more rows (already a quiet NaN)
        else:
            scalar[0] = num if mode == MEAN else np.sqrt(np.float64(num))
            if num < 10:  # TF scales the first (only) block by 1/n; longer segments divide
                scalar[0] = 1 / scalar[0]
        s = scalar[0]
        if num <= 4:  # summed, scaled and stored at once; a literal count per call (row_lanes.py)
            a, b, d = rows[start + 1], rows[start + min(2, num - 1)], rows[start + num - 1]
            if num == 2:
                for c0 in range(0, lanes_end, LANES):
                    pool_lanes(out, seg, column + c0, data, first, a, a, a, 2, s, c0)
                for c in range(lanes_end, width):
                    out[seg, column + c] = (data[first, c] + data[a, c]) * s
            elif num == 3:
                for c0 in range(0, lanes_end, LANES):
                    pool_lanes(out, seg, column + c0, data, first, a, b, b, 3, s, c0)
                for c in range(lanes_end, width):
                    out[seg, column + c] = ((data[first, c] + data[a, c]) + data[b, c]) * s
            else:
                for c0 in range(0, lanes_end, LANES):
                    pool_lanes(out, seg, column + c0, data, first, a, b, d, 4, s, c0)
                for c in range(lanes_end, width):
                    out[seg, column + c] = (((data[first, c] + data[a, c]) + data[b, c]) + data[d, c]) * s
            continue
        r = num & 7  # the first block's rows (TF's order, module doc)
        if r < 2:
            r += 8
        how = 0 if mode == SUM else (1 if num < 10 else 2)
        for c0 in range(0, lanes_end, LANES):
            pool_run_lanes(out, seg, column + c0, data, rows, start, start + r, end, how, s, c0)
        for c in range(lanes_end, width):  # the same sums, an element at a time
            x = data[first, c]
            for k in range(start + 1, start + r):
                x += data[rows[k], c]
            for b in range(start + r, end, 8):
                t = data[rows[b], c]
                for j in range(b + 1, b + 8):
                    t += data[rows[j], c]
                x += t
            out[seg, column + c] = x if how == 0 else (x * s if how == 1 else x / s)


@njit(cache=True, nogil=True)
def _segment_runs(segment_ids):
    """(starts, targets): the runs of equal ids in sorted ``segment_ids``."""
    n = segment_ids.shape[0]
    count = 0
    for i in range(n):
        if i == 0 or segment_ids[i] != segment_ids[i - 1]:
            count += 1
    starts = np.empty(count + 1, np.int64)
    targets = np.empty(count, np.int64)
    q = 0
    for i in range(n):
        if i == 0 or segment_ids[i] != segment_ids[i - 1]:
            starts[q] = i
            targets[q] = segment_ids[i]
            q += 1
    starts[count] = n
    return starts, targets


@njit(cache=True, nogil=True)
def sparse_segment_reduce(data, indices, segment_ids, num_segments, mode, err):
    """``num_segments`` NO_NUM_SEGMENTS means "last segment id + 1" (the op without it).

    Validation follows TF: num_segments is read as an int32 (TF ignores its int64 dtype), with
    int32 indices the last segment id must be below 2**31 - 1, and with int32 segment ids
    "last id + 1" wraps.
    """
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
    last = np.int64(segment_ids[n - 1]) if n > 0 else np.int64(0)
    kintmax = np.int64(2147483647) if indices.itemsize == 4 else np.int64(INT64_MAX)  # the indices' type's max, as TF
    if last >= kintmax:
        set_error(err, "Last segment id must be < kintmax, got ", last, " limit ", kintmax)
        return empty
    rows = last + 1 if n > 0 else np.int64(0)
    if segment_ids.itemsize == 4 and rows > 2147483647:
        rows = np.int64(-2147483648)  # TF computes last id + 1 in the segment ids' type
    if num_segments != NO_NUM_SEGMENTS:
        rows = np.int64(np.int32(num_segments))
        if n > 0 and rows < last + 1:
            set_error(err, "segment ids must be < num_segments")
            return empty
    if rows < 0:
        set_error(err, "segment ids must be >= 0")
        return empty
    prev = segment_ids[0] if n > 0 else 0
    for i in range(n):
        s = segment_ids[i]
        if s < prev:
            set_error(err, "segment ids are not increasing")
            return empty
        if s < 0 or s >= rows:
            set_error(err, "Segment id ", s, " out of range [0, ", rows,
                      "), possibly because 'segment_ids' input is not sorted.")
            return empty
        prev = s
        j = indices[i]
        if j < 0 or j >= n_rows:
            set_error(err, "Bad: indices[", i, "] == ", j, " out of range [0, ", n_rows, ")")
            return empty
    try:  # segment ids and num_segments are data: they may ask for more than can be allocated
        out = np.zeros((rows, width), d.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, width), np.int64))
        return empty
    starts, targets = _segment_runs(segment_ids)
    reduce_runs(flat, indices, starts, targets, mode, out, np.int64(0))
    return out

"""SegmentSum and SegmentMax (sorted ids; output rows = last id + 1; an empty segment is 0, as
in TF's sorted kernels, which copy a one-row segment) and UnsortedSegmentSum (num_segments rows;
negative ids are dropped, as TF drops them) over a [n, inner] view of the data. Each check runs
where TF's kernel runs it, so the first error is TF's. A segment of floats adds in TF's Eigen order
(reduce.py ``_preserving``: 4 packet accumulators from 16 rows on); integers in row order, which
gives the same bits."""
import numpy as np
from numba import njit

from .errors import multi_index, set_error
from .reduce import EIGEN_UNROLL, sum_preserving_as_tf


@njit(cache=True, nogil=True)
def segment_sum(data, ids, err, take_max=False):
    n, inner = data.shape[0], data.shape[1]
    if ids.shape[0] != n:
        set_error(err, "segment_ids should be the same size as dimension 0 of input.")
        return np.zeros((0, inner), data.dtype)
    rows = np.int64(ids[n - 1]) + 1 if n > 0 else 0
    if n > 0 and rows <= 0:
        set_error(err, "segment ids must be >= 0")
        return np.zeros((0, inner), data.dtype)
    out = np.zeros((rows, inner), data.dtype)
    start = 0
    while start < n:
        seg = np.int64(ids[start])
        end = start + 1
        while end < n and np.int64(ids[end]) == seg:
            end += 1
        if end < n and seg > np.int64(ids[end]):
            set_error(err, "segment ids are not increasing")
            return out
        if seg < 0 or seg >= rows:
            set_error(err, "Segment id ", seg, " out of range [0, ", rows,
                      "), possibly because 'segment_ids' input is not sorted.")
            return out
        if not take_max and end - start >= EIGEN_UNROLL:
            sums = sum_preserving_as_tf(np.ascontiguousarray(data[start:end]).reshape((1, end - start, inner)))
            for j in range(inner):
                out[seg, j] = sums[0, j]
            start = end
            continue
        for i in range(start, end):
            for j in range(inner):
                if take_max:
                    if i == start or data[i, j] > out[seg, j]:
                        out[seg, j] = data[i, j]
                elif end - start == 1:  # TF copies a one-row segment: -0.0 stays
                    out[seg, j] = data[i, j]
                else:
                    out[seg, j] += data[i, j]
        start = end
    return out


@njit(cache=True, nogil=True)
def unsorted_segment_sum(data, ids, ids_shape, num_segments, err):
    """``ids`` flat; ``ids_shape`` (int64 vector) only names a bad id's position as TF does."""
    inner = data.shape[1]
    rows = np.int64(num_segments[0])
    if rows < 0:
        set_error(err, "Input num_segments == ", rows, " must not be negative.")
        return np.zeros((0, inner), data.dtype)
    out = np.zeros((rows, inner), data.dtype)
    if data.size == 0:  # TF returns before it looks at the ids only when there is no data
        return out
    for i in range(ids.shape[0]):
        seg = np.int64(ids[i])
        if seg < 0:
            continue
        if seg >= rows:
            if ids_shape.shape[0] > 0:  # TF names the id's position, as a shape: "segment_ids[1,0]"
                set_error(err, "segment_ids", multi_index(ids_shape, i), " = ", seg, " is out of range [0, ", rows, ")")
            else:
                set_error(err, "segment_ids = ", seg, " is out of range [0, ", rows, ")")
            return out
        for j in range(inner):
            out[seg, j] += data[i, j]
    return out


@njit(cache=True, nogil=True)
def check_prefix(data_shape, ids_shape, err):
    """UnsortedSegmentSum's segment_ids must shape the leading dims of data (shapes as int64
    vectors: tuples of different lengths do not type together)."""
    same = ids_shape.shape[0] <= data_shape.shape[0]
    for d in range(min(ids_shape.shape[0], data_shape.shape[0])):
        same = same and data_shape[d] == ids_shape[d]
    if not same:
        set_error(err, "data.shape = ", data_shape, " does not start with segment_ids.shape = ", ids_shape)

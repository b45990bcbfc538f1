"""Bucketized embedding bag: the embedding of a bucketized numeric column in one pass.

feature_column_v2's BucketizedColumn gives each value of a [n, d] numeric input its bucket, and
the value in column j the id bucket + j * (len(boundaries) + 1), at (r, j) of a [n, d] SparseTensor
built from ranges, tiles, a stack and a transpose; the embedding column reshapes it, filters its
ids (all >= 0) and pools each row (feature_column/bucket_bag.py has the graph). Every value has an
id, so row r of the bag holds the ids of x's flat range [r * inner, (r + 1) * inner), as a string
bag's rows do with no empty strings (string_bag.py): the ids are computed in place, checked as the
gather checks them, and combined by ``reduce_runs``: the same bits.
"""
import numpy as np
from numba import njit

from .bucketize import bucketize
from .errors import out_of_memory, set_error
from .sparse_segment_reduction import reduce_runs
from .string_bag import bag_rows, check_buckets


@njit(cache=True, nogil=True)
def bucket_bag(x, new_shape, table, boundaries, columns, mode, err):
    """``x``: the [n, d] input; ``new_shape``: the SparseReshape's target; ``boundaries`` as
    kernels/bucketize.py takes them; ``columns``: the d the column's ids were built for (the
    graph's constant). ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    n, d = x.shape
    width = table.shape[1]
    empty = np.zeros((0, width), table.dtype)
    if d != columns and n > 0:  # the bucket ids and the column offsets added to them differ in length
        set_error(err, "Incompatible shapes: [", n * d, "] vs. [", n * columns, "]")
        return empty
    rows, inner = bag_rows(np.array(x.shape, np.int64), new_shape, err)
    if rows == 0:
        return empty
    try:  # the shape is data: it may ask for more rows than can be allocated
        out = np.zeros((rows, width), table.dtype)
    except Exception:
        out_of_memory(err, np.array((rows, width), np.int64))
        return empty
    buckets = bucketize(np.ascontiguousarray(x), boundaries)
    ids = np.empty(n * d, np.int64)
    stride = boundaries.shape[0] + 1
    for r in range(n):
        for j in range(d):
            ids[r * d + j] = buckets[r * d + j] + j * stride
    check_buckets(ids, n * d, rows, table.shape[0], err)
    if err[0] != 0:
        return empty
    starts = np.arange(rows + 1) * inner
    reduce_runs(table, ids, starts, np.arange(rows), mode, out, np.int64(0))
    return out

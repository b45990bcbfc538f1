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
from .errors import set_error
from .string_bag import pool_bag, start_bag


@njit(cache=True, nogil=True)
def bucket_bag(x, new_shape, table, boundaries, columns, mode, err):
    """``x``: the [n, d] input; ``new_shape``: the SparseReshape's target; ``boundaries`` as
    kernels/bucketize.py takes them; ``columns``: the d the column's ids were built for (the
    graph's constant). ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    n, d = x.shape
    if d != columns and n > 0:  # the bucket ids and the column offsets added to them differ in length
        set_error(err, "Incompatible shapes: [", n * d, "] vs. [", n * columns, "]")
        return np.zeros((0, table.shape[1]), table.dtype)
    rows, inner, starts, out = start_bag(np.array(x.shape, np.int64), new_shape, table, err)
    if rows == 0:
        return out
    buckets = bucketize(np.ascontiguousarray(x), boundaries)
    ids = np.empty(n * d, np.int64)
    stride = boundaries.shape[0] + 1
    for r in range(n):
        for j in range(d):
            ids[r * d + j] = buckets[r * d + j] + j * stride
    for r in range(rows + 1):
        starts[r] = r * inner
    return pool_bag(table, ids, starts, rows, mode, out, err)

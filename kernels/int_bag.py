"""Integer embedding bag: an identity, integer-vocabulary or hashed-integer embedding column over
a dense integer input in one pass.

Replaces what feature columns build for a dense integer input ``X`` (its ignore value dropped,
-1 by default; the vocabulary frozen by passes/freeze_tables.py):

    idx = Where(NotEqual(X, ignore));  ids = GatherNd(X, idx)              (identity column)
                                       or ids outside [0, n) made the default    (with a default)
                                       or _BladeTableFind(GatherNd(X, idx), default, index...)
                                       or _BladeHashInts(GatherNd(X, idx))  (hash buckets)
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])                     (the id filter, optional)
    idx', shape' = SparseReshape(idx, Shape(X), new_shape)                (optional)
    out = _BladeEmbeddingBag(GatherV2(idx', keep), GatherV2(ids, keep), shape', table)

As vocabulary_bag.py does for strings: row r of the bag holds the ids of the values other than
``ignore`` of X's flat range [r * inner, (r + 1) * inner), in order, less the negative ones when
the filter is there (``drop_negative``; without it a negative id is the gather's error).
"""
import numpy as np
from numba import njit

from .farmhash import int_buckets
from .string_bag import drop_negative_ids, pool_bag, start_bag
from .table_lookup import int_value, shift_of

IDENTITY, VOCABULARY, HASH, IDENTITY_DEFAULT = 0, 1, 2, 3  # where a value's id comes from


@njit(cache=True, nogil=True)
def int_ids(x, ignore, kind, default, slots, keys, values, num_buckets, rows, inner, starts):
    """The ids of X's values other than ``ignore`` (one element), row by row (row r of ``inner``
    values; its ids from starts[r] to starts[r + 1]), by ``kind`` (``int_bag``)."""
    flat = x.reshape(x.size)
    ids = np.empty(flat.shape[0], np.int64)
    skip = ignore[0]
    listed = 0
    for r in range(rows):  # the values kept, listed without a branch
        starts[r] = listed
        for k in range(r * inner, (r + 1) * inner):
            ids[listed] = flat[k]
            listed += flat[k] != skip
    starts[rows] = listed
    if kind == VOCABULARY:
        shift = shift_of(slots.shape[0])
        for j in range(listed):
            ids[j] = int_value(ids[j], slots, shift, keys, values, default[0])
    elif kind == HASH:
        int_buckets(ids, listed, num_buckets, ids)
    elif kind == IDENTITY_DEFAULT:
        for j in range(listed):
            if ids[j] < 0 or ids[j] >= num_buckets:
                ids[j] = default[0]
    return ids


@njit(cache=True, nogil=True)
def int_bag(x, new_shape, table, ignore, kind, default, slots, keys, values, num_buckets, drop_negative, mode, err):
    """``x``: the column's X (C-contiguous, any rank); ``new_shape``: the reshape's target (X's
    shape when the chain has no SparseReshape); ``ignore``: the value dropped (one element). The
    ids are, by ``kind``: X's values (IDENTITY), their values in the frozen vocabulary ``default``,
    ``slots``, ``keys``, ``values`` (VOCABULARY, table_lookup.py), or the buckets of their decimal
    text among ``num_buckets`` (HASH, farmhash.py), or X's values in [0, ``num_buckets``) and
    ``default`` in place of the others (IDENTITY_DEFAULT). ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    rows, inner, starts, out = start_bag(np.array(x.shape, np.int64), new_shape, table, err)
    if rows == 0:
        return out
    ids = int_ids(x, ignore, kind, default, slots, keys, values, num_buckets, rows, inner, starts)
    if drop_negative:
        drop_negative_ids(ids, starts, rows)
    return pool_bag(table, ids, starts, rows, mode, out, err)

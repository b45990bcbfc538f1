"""Vocabulary embedding bag: a vocabulary-list or vocabulary-file embedding column over dense
strings in one pass.

Replaces what feature columns build for a dense string input ``S`` (empty strings dropped, the
vocabulary frozen by passes/freeze_tables.py, then embedding_column):

    idx = Where(NotEqual(S, ""))
    ids = _BladeTableFind(GatherNd(S, idx), default, index...)      (or _BladeTableFindOrBucket)
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])                (the column's id filter)
    idx', shape' = SparseReshape(idx, Shape(S), new_shape)           (optional)
    out = _BladeEmbeddingBag(GatherV2(idx', keep), GatherV2(ids, keep), shape', table)

As string_bag.py does for hashed columns: row r of the bag holds the ids of the non-empty strings
of S's flat range [r * inner, (r + 1) * inner), in order, less those the vocabulary maps below 0
when the filter is there (``drop_negative``; without it such an id is the gather's error). Rows
are combined by the embedding bag's ``reduce_runs``: the same bits.
"""
import numpy as np
from numba import njit

from ..runtime.abi import address
from .farmhash import fingerprint64_at
from .string_bag import FIRST_ROW, drop_negative_ids, list_non_empty, pool_bag, start_bag
from .strings import string_at
from .table_lookup import find_key, shift_of, vocabulary_value


@njit(cache=True, nogil=True)
def vocabulary_ids(flat, offsets, data, rows, inner, default, slots, key_offsets, key_data, values, num_buckets,
                   offset, starts):
    """The ids of the non-empty strings of S (``flat``), row by row (row r of ``inner`` strings; its
    ids from starts[r] to starts[r + 1]), looked up in the frozen vocabulary (``vocabulary_bag``)."""
    ids = np.empty(flat.shape[0], np.int64)
    listed = list_non_empty(flat, offsets, data, FIRST_ROW, rows, inner, ids, starts)
    shift, buckets = shift_of(slots.shape[0]), np.uint64(num_buckets)
    for j in range(listed):  # each listed string's id, in place
        buf, start, length = string_at(offsets, data, ids[j])
        fingerprint = fingerprint64_at(address(buf) + start, length)
        k = find_key(buf, start, length, fingerprint, slots, shift, key_offsets, key_data)
        ids[j] = vocabulary_value(k, fingerprint, values, default[0], buckets, offset[0])
    return ids


@njit(cache=True, nogil=True)
def vocabulary_bag(strings, offsets, data, new_shape, table, default, slots, key_offsets, key_data, values,
                   num_buckets, offset, drop_negative, mode, err):
    """``strings``: the column's S (C-contiguous, any rank); ``new_shape``: the reshape's target
    (S's shape when the chain has no SparseReshape); ``default`` .. ``values``: the frozen
    vocabulary (table_lookup.py); ``num_buckets`` its OOV buckets (0: none) after ``offset`` (the
    table's size, as a 1-element array). ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    flat = strings.reshape(strings.size)
    rows, inner, starts, out = start_bag(np.array(strings.shape, np.int64), new_shape, table, err)
    if rows == 0:
        return out
    ids = vocabulary_ids(flat, offsets, data, rows, inner, default, slots, key_offsets, key_data, values, num_buckets,
                         offset, starts)
    if drop_negative:
        drop_negative_ids(ids, starts, rows)
    return pool_bag(table, ids, starts, rows, mode, out, err)

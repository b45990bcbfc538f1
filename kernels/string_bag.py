"""Hashed string embedding bag: a hash-bucket embedding column over dense strings in one pass.

Replaces what feature columns build for a dense string input ``S`` (empty strings dropped, then
categorical_column_with_hash_bucket, then embedding_column):

    idx = Where(NotEqual(S, ""));  ids = StringToHashBucketFast(GatherNd(S, idx))
    idx', shape' = SparseReshape(idx, Shape(S), new_shape)         (optional)
    out = _BladeEmbeddingBag(idx', ids, shape', table)

Where lists the non-empty strings in row-major order and the reshape keeps that order, so row r of
the bag holds the non-empty strings of S's flat range [r * inner, (r + 1) * inner), inner being the
product of the output shape past its first dim. No coordinates, gathered strings or reordering are
built; rows are combined by the embedding bag's own ``reduce_runs``: the same bits.
"""
import numpy as np
from numba import njit

from ..runtime.abi import address
from .errors import out_of_memory, set_error
from .farmhash import EMPTY_FINGERPRINT, fingerprint64_at
from .sparse_reshape import resolve_shape
from .sparse_segment_reduction import reduce_runs
from .strings import string_at, string_length


@njit(cache=True, nogil=True)
def bag_rows(in_shape, new_shape, err):
    """(rows, inner) of the bag over strings of shape ``in_shape`` reshaped to ``new_shape``, with
    SparseReshape's checks: row r holds the non-empty strings of the flat range [r * inner,
    (r + 1) * inner)."""
    out_shape, dense_size = resolve_shape(in_shape, new_shape, err)
    if err[0] != 0:
        return 0, 0
    rows = out_shape[0] if out_shape.shape[0] > 0 else 0
    if rows == 0:  # then the strings are empty too (the shapes' sizes agree)
        return 0, 0
    return rows, dense_size // rows  # the reshape resolved: rows * inner == dense_size


# Typed arguments, not literals: a literal 0 or 1 is a type of its own to Numba, and every
# combination compiled hash_rows (and its Fingerprint64) again.
FIRST_ROW, ONE_ROW = np.int64(0), np.int64(1)


@njit(cache=True, nogil=True, inline="always")
def list_non_empty(flat, offsets, data, first_row, n_rows, inner, ids, starts):
    """The string ids of the non-empty strings of rows first_row .. first_row + n_rows - 1 (row i
    of ``inner`` strings) into ``ids``, row i's from starts[i] to starts[i + 1]; how many. Listed
    first, then hashed or looked up: whether a string is empty is as good as random, and a branch
    on it in the hash loop mispredicted often (26 Criteo columns of 512 rows: 0.29 -> 0.20 ms).
    The list is counted without a branch."""
    at = 0
    for i in range(n_rows):  # row by row: no division per string
        starts[i] = at
        for k in range((first_row + i) * inner, (first_row + i + 1) * inner):
            ids[at] = flat[k]
            at += string_length(offsets, data, flat[k]) != 0
    starts[n_rows] = at
    return at


@njit(cache=True, nogil=True)
def hash_rows(flat, offsets, data, first_row, n_rows, inner, nb, ids, starts):
    """Buckets of the non-empty strings of rows first_row .. first_row + n_rows - 1 into ``ids``,
    row i's from starts[i] to starts[i + 1]; ``ids`` has room for every string of the rows (it
    lists them first). Many rows a call: each call takes and drops a reference on every array,
    atomics that parallel callers contend for."""
    at = list_non_empty(flat, offsets, data, first_row, n_rows, inner, ids, starts)
    for j in range(at):
        buf, first, length = string_at(offsets, data, ids[j])
        ids[j] = np.int64(fingerprint64_at(address(buf) + first, length) % nb)


@njit(cache=True, nogil=True)
def hash_every_string(flat, offsets, data, base, n, nb, ids, places):
    """ids[k] = the bucket of string flat[base + k] for k < n, "" included (Keras's Hashing, whose
    rows are padded with it); ``places``: scratch of n. As hash_rows, no branch on whether a
    string is empty: every place gets ""'s bucket (a constant, not a hash of nothing) while the
    non-empty strings' places are listed, then those are hashed into place. A branch per string
    on its emptiness hashed keras-prep's 26 columns of 4096 rows in 3.02 ms on one thread, this
    in 1.91 ms."""
    empty = np.int64(EMPTY_FINGERPRINT % nb)
    at = 0
    for k in range(n):
        ids[k] = empty
        places[at] = k
        at += string_length(offsets, data, flat[base + k]) != 0
    for j in range(at):
        p = places[j]
        buf, first, length = string_at(offsets, data, flat[base + p])
        ids[p] = np.int64(fingerprint64_at(address(buf) + first, length) % nb)


@njit(cache=True, nogil=True)
def check_buckets(ids, nnz, rows, n_table, err):
    """The gather's error for the first of the bag's ``nnz`` ids that misses a table of
    ``n_table`` rows (possible when the column has more buckets than the table has rows, or a
    vocabulary gives negative ids that no filter drops)."""
    for k in range(nnz):
        if ids[k] < 0 or ids[k] >= n_table:
            set_error(err, "indices[", k, "] = ", ids[k], " is not in [0, ", n_table, ")")
            return
    if n_table == 0 and nnz < rows:  # an empty row gathers the default id 0
        set_error(err, "indices[0] = 0 is not in [0, 0)")


@njit(cache=True, nogil=True)
def find_bucket_miss(flat, offsets, data, rows, num_buckets, n_table, err):
    """check_buckets over the bag's strings, hashed as one run: no per-row counts to allocate."""
    ids = np.empty(flat.shape[0], np.int64)
    nnz = np.empty(2, np.int64)
    hash_rows(flat, offsets, data, FIRST_ROW, ONE_ROW, flat.shape[0], np.uint64(num_buckets), ids, nnz)
    check_buckets(ids, nnz[1], rows, n_table, err)


@njit(cache=True, nogil=True)
def string_bag(strings, offsets, data, new_shape, table, num_buckets, mode, err):
    """``strings``: pool ids of S (C-contiguous, any rank); ``new_shape``: the reshape's target
    (S's own shape when the chain has no SparseReshape). ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    return flat_string_bag(strings.reshape(strings.size), np.array(strings.shape, np.int64), offsets, data,
                           new_shape, table, num_buckets, mode, err)


@njit(cache=True, nogil=True)
def flat_string_bag(flat, in_shape, offsets, data, new_shape, table, num_buckets, mode, err):
    """string_bag over S's ids flattened, S's shape given apart."""
    rows, inner, starts, out = start_bag(in_shape, new_shape, table, err)
    if rows == 0:
        return out
    ids = np.empty(flat.shape[0], np.int64)
    hash_rows(flat, offsets, data, FIRST_ROW, rows, inner, np.uint64(num_buckets), ids, starts)
    return pool_bag(table, ids, starts, rows, mode, out, err)


# What the bags over dense inputs share (this file's, vocabulary_bag.py's, int_bag.py's, bucket_bag.py's).

@njit(cache=True, nogil=True)
def start_bag(in_shape, new_shape, table, err):
    """(rows, inner, starts, out) of a bag over values of shape ``in_shape`` reshaped to
    ``new_shape`` (``bag_rows``): room for each row's start and the end, and the zeroed output
    (an empty row stays zero). rows 0: nothing to pool, or ``err`` says why (the reshape's check,
    or more rows than memory holds); ``out`` is then empty."""
    width = table.shape[1]
    rows, inner = bag_rows(in_shape, new_shape, err)
    if rows > 0:
        try:  # the shape is data: it may ask for more rows than can be allocated
            return rows, inner, np.empty(rows + 1, np.int64), np.zeros((rows, width), table.dtype)
        except Exception:
            out_of_memory(err, np.array((rows, width), np.int64))
    return 0, 0, np.empty(1, np.int64), np.zeros((0, width), table.dtype)


@njit(cache=True, nogil=True)
def drop_negative_ids(ids, starts, rows):
    """Closes each row's ids (row i's from starts[i] to starts[i + 1]) up over its negative ones,
    as the column's id filter drops them, without a branch. Most bags have none (a vocabulary with
    OOV buckets, an identity column): a scan for one first costs a fraction of the close-up."""
    for j in range(starts[rows]):
        if ids[j] < 0:
            break
    else:
        return
    kept, first = 0, 0
    for r in range(rows):
        end = starts[r + 1]
        starts[r] = kept
        for j in range(first, end):
            v = ids[j]
            ids[kept] = v
            kept += v >= 0
        first = end
    starts[rows] = kept


@njit(cache=True, nogil=True)
def pool_bag(table, ids, starts, rows, mode, out, err):
    """``out`` with row r the pool of table[ids[starts[r]:starts[r + 1]]] (``reduce_runs``: TF's
    order), after the gather's check of every id; empty when one misses."""
    check_buckets(ids, starts[rows], rows, table.shape[0], err)
    if err[0] != 0:
        return out[:0]
    reduce_runs(table, ids, starts, np.arange(rows), mode, out, np.int64(0))
    return out

"""SparseCross with hashed output (crossed_column, Keras HashedCrossing): TF's HashCrosser;
SparseCrossHashed (TF's HashCrosserV2 over keyed columns); and string crosses (SparseCross
without hashing, SparseCrossV2, ``tf.sparse.cross``): TF's StringCrosser.

Each column is a list of features per batch row: a sparse input contributes, for row b, the run
of consecutive entries whose row index is b (TF's ExtractFeatureData: entries out of order or
out of range are never read), a dense input its row. A feature is the Fingerprint64 of a string
or the int64 itself. Every combination (the last column varying fastest) hashes to
FingerprintCat64(...FingerprintCat64(hash_key, f0)..., fk) % num_buckets.

SparseCrossHashed starts the chain from f0 itself and hashes its features differently: a string
is SipHash(salt, s) with strong_hash, else Fingerprint64(s); an int64 is SipHash or Fingerprint64
of its first 4 bytes (TF hashes sizeof(DataType) bytes of it), except that a dense int64 without
strong_hash stays the int itself.
"""
import numpy as np
from numba import carray, njit

from ..runtime.abi import ptr_from_int
from .errors import INT64_MAX, set_error
from .farmhash import fingerprint64
from .ragged_to_sparse import sparse_of_rows
from .siphash import siphash24
from .strings import new_tstrings, put_into, string_at, string_at_outlined

_KMUL = np.uint64(0xC6A4A7935BD1E995)
_47 = np.uint64(47)


@njit(cache=True, nogil=True)
def _shift_mix(v):
    return v ^ (v >> _47)


@njit(cache=True, nogil=True)
def fingerprint_cat64(fp1, fp2):
    result = fp1 ^ _KMUL
    result ^= _shift_mix(fp2 * _KMUL) * _KMUL
    result *= _KMUL
    result = _shift_mix(result) * _KMUL
    return _shift_mix(result)


@njit(cache=True, nogil=True)
def int_features(values):
    flat = values.ravel()
    out = np.empty(flat.shape[0], np.uint64)
    for i in range(flat.shape[0]):
        out[i] = np.uint64(np.int64(flat[i]))
    return out


@njit(cache=True, nogil=True)
def keyed_string_features(ids, offsets, data, strong, k0, k1):
    """SipHash(k0, k1) of each string with ``strong``, else its Fingerprint64 (both crossers)."""
    flat = ids.ravel()
    out = np.empty(flat.shape[0], np.uint64)
    for i in range(flat.shape[0]):
        buf, start, n = string_at(offsets, data, flat[i])
        out[i] = siphash24(buf, start, n, k0, k1) if strong else fingerprint64(buf, start, n)
    return out


@njit(cache=True, nogil=True)
def keyed_int_features(values, strong, k0, k1, dense):
    flat = values.ravel()
    out = np.empty(flat.shape[0], np.uint64)
    low = np.empty(4, np.uint8)
    for i in range(flat.shape[0]):
        v = np.uint64(np.int64(flat[i]))
        if dense and not strong:
            out[i] = v
            continue
        for k in range(4):  # little-endian: the int64's first 4 bytes in memory
            low[k] = np.uint8((v >> np.uint64(8 * k)) & np.uint64(0xFF))
        out[i] = siphash24(low, np.int64(0), np.int64(4), k0, k1) if strong else fingerprint64(low, np.int64(0), np.int64(4))
    return out


@njit(cache=True, nogil=True)
def batch_size(shape, err):
    """The batch size a sparse input's dense_shape names (TF reads shapes[0][0])."""
    if shape.shape[0] != 2:
        set_error(err, "shape should imply a 2D tensor, but got [", shape.shape[0], "] at position 0")
        return np.int64(0)
    b = np.int64(shape[0])
    if b < 0:  # TF sizes a std::vector with it and aborts; refuse instead
        set_error(err, "SparseCross: batch size must be non-negative, got ", b)
    return b


@njit(cache=True, nogil=True)
def check_sparse(position, indices, values_size, shape, batch, err):
    if indices.shape[1] != 2:
        set_error(err, "Expected D2 of index to be 2 got ", indices.shape[1], " at position ", position)
    elif indices.shape[0] != values_size:
        set_error(err, "Expected size of values to be ", indices.shape[0], " got ", values_size, " at position ",
                  position)
    elif shape.shape[0] != 2:
        set_error(err, "shape should imply a 2D tensor, but got [", shape.shape[0], "] at position ", position)
    elif np.int64(shape[0]) != batch:
        set_error(err, "Expected batch size ", batch, " got ", np.int64(shape[0]), " at position ", position)


@njit(cache=True, nogil=True)
def check_dense(position, rows, batch, err):
    if rows != batch:
        set_error(err, "Expected batch size ", batch, " got ", rows, " at dense tensor ", position)


@njit(cache=True, nogil=True)
def _rows(batch, err):
    try:
        return np.zeros(batch, np.int64), np.zeros(batch, np.int64)
    except Exception:  # a dense_shape naming a huge batch: TF fails to allocate as well
        set_error(err, "SparseCross: cannot allocate rows for batch size ", batch)
        return np.zeros(0, np.int64), np.zeros(0, np.int64)


@njit(cache=True, nogil=True)
def sparse_rows(indices, batch, err):
    """(counts, starts) per batch row, exactly as TF's ExtractFeatureData walks the indices."""
    counts, starts = _rows(batch, err)
    if err[0] != 0:
        return counts, starts
    row = 0
    for b in range(batch):
        starts[b] = row
        while row < indices.shape[0] and indices[row, 0] == b:
            counts[b] += 1
            row += 1
    return counts, starts


@njit(cache=True, nogil=True)
def dense_rows(batch, width):
    return np.full(batch, width, np.int64), np.arange(batch) * width


# The crossing kernels take their per-column arrays (features, ids, pools, counts, starts) as
# part tables (kernels/concat.part_table: one row a 1-D array, its address, length and stride in
# bytes), not tuples: a tuple's length is part of its Numba type, and each new number of crossed
# columns compiled them again.
@njit(cache=True, nogil=True, inline="always")
def _item(table, c, i, dtype):
    """Element i of column c's array (of ``dtype``) in ``table``."""
    return carray(ptr_from_int(table[c, 0] + i * table[c, 2], dtype), (1,))[0]


@njit(cache=True, nogil=True, inline="always")
def _feature_string(ids, tstrings, starts, perm, c, b):
    """string_at of column c's feature in row b's combination ``perm`` (``tstrings``: a table of
    contiguous tstring buffers)."""
    pool = carray(ptr_from_int(tstrings[c, 0], np.uint8), (tstrings[c, 1],))
    return string_at_outlined(pool, pool[:0], _item(ids, c, _item(starts, c, b, np.int64) + perm[c], np.int64))


@njit(cache=True, nogil=True)
def _layout(counts, batch):
    """The start of each row's crosses in the output, plus the total at the end: a row crosses
    every combination of its columns' features."""
    out_start = np.zeros(batch + 1, np.int64)
    for b in range(batch):
        n = 1
        for c in range(counts.shape[0]):
            n *= _item(counts, c, b, np.int64)
        out_start[b + 1] = out_start[b] + n
    return out_start


@njit(cache=True, nogil=True, inline="always")
def _next_combination(perm, counts, b):
    """The next combination of a row's features, the last column varying fastest (TF's order)."""
    for c in range(perm.shape[0] - 1, -1, -1):
        perm[c] += 1
        if perm[c] < _item(counts, c, b, np.int64):
            return
        perm[c] = 0


@njit(cache=True, nogil=True)
def cross_hashed(features, counts, starts, batch, num_buckets, hash_key, from_first, err):
    """Returns (indices [total, 2], values [total], dense_shape [2]) of the crossed SparseTensor.
    ``from_first``: SparseCrossHashed's chain, seeded with the first feature, not hash_key.
    ``features``, ``counts``, ``starts``: part tables of each column's uint64 features and int64
    per-row counts and starts."""
    ncol = features.shape[0]
    out_start = _layout(counts, batch)
    values = np.empty(out_start[batch], np.int64)
    perm = np.zeros(ncol, np.int64)
    buckets = np.uint64(num_buckets) if num_buckets > 0 else np.uint64(INT64_MAX)
    for b in range(batch):
        k = out_start[b]
        perm[:] = 0
        for j in range(out_start[b + 1] - k):
            first = _item(features, 0, _item(starts, 0, b, np.int64) + perm[0], np.uint64)
            h = first if from_first else fingerprint_cat64(np.uint64(hash_key), first)
            for c in range(1, ncol):
                h = fingerprint_cat64(h, _item(features, c, _item(starts, c, b, np.int64) + perm[c], np.uint64))
            values[k + j] = np.int64(h % buckets)
            _next_combination(perm, counts, b)
    indices, shape = sparse_of_rows(out_start, batch)
    return indices, values, shape


@njit(cache=True, nogil=True)
def cross_strings(ids, tstrings, counts, starts, batch, sep, err):
    """SparseCross without hashing and SparseCrossV2: each cross is its features' bytes joined by
    ``sep`` (TF's StrJoin). Column c's features are the strings ``ids[c]`` picks in ``tstrings[c]``
    (int64 columns come formatted, as std::to_string does); ``ids``, ``tstrings``, ``counts`` and
    ``starts`` are part tables. Returns (indices, tstrings of the crosses, dense_shape); on error,
    empty ones."""
    ncol = ids.shape[0]
    out_start = _layout(counts, batch)
    total = out_start[batch]
    sep_buf, sep_at, sep_len = string_at_outlined(sep, sep[:0], np.int64(0))
    lengths = np.empty(total, np.int64)
    perm = np.zeros(ncol, np.int64)
    for b in range(batch):  # first the lengths, so the output is allocated once
        perm[:] = 0
        for j in range(out_start[b + 1] - out_start[b]):
            size = sep_len * (ncol - 1)
            for c in range(ncol):
                _, _, n = _feature_string(ids, tstrings, starts, perm, c, b)
                size += n
            lengths[out_start[b] + j] = size
            _next_combination(perm, counts, b)
    out, where = new_tstrings(lengths, err)
    if err[0] != 0:
        return np.zeros((0, 2), np.int64), out, np.zeros(2, np.int64)
    for b in range(batch):
        perm[:] = 0
        for j in range(out_start[b + 1] - out_start[b]):
            at = where[out_start[b] + j]
            for c in range(ncol):
                if c > 0:
                    put_into(out, at, sep_buf[sep_at:sep_at + sep_len])
                    at += sep_len
                buf, start, n = _feature_string(ids, tstrings, starts, perm, c, b)
                put_into(out, at, buf[start:start + n])
                at += n
            _next_combination(perm, counts, b)
    indices, shape = sparse_of_rows(out_start, batch)
    return indices, out, shape

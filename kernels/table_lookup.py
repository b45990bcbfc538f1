"""LookupTableFindV2 on a static hash table frozen at optimize time (vocabulary columns, Keras
StringLookup / IntegerLookup): an open-addressing index over the table's keys.

``build_*`` runs once, when the model is optimized; ``find_*`` per call. Slots hold a key's
position (or -1); string keys are placed by their FarmHash Fingerprint64, integer keys by a
Fibonacci hash, and a match is always confirmed on the key itself, so collisions cost a probe,
never a wrong answer.
"""
import numpy as np
from numba import njit

from ..runtime.abi import address
from .farmhash import fingerprint64, fingerprint64_at
from .strings import string_at

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _capacity(n):
    cap, bits = 16, 4
    while cap < 2 * n:
        cap *= 2
        bits += 1
    return cap, np.uint64(64 - bits)


@njit(cache=True, nogil=True)
def shift_of(cap):
    """The product shift that built a table of ``cap`` (a power of two) slots."""
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    return np.uint64(64 - bits)


@njit(cache=True, nogil=True)
def _int_slot(key, shift):
    return np.int64((np.uint64(np.int64(key)) * _GOLDEN) >> shift)


@njit(cache=True, nogil=True, inline="always")
def _fingerprint_slot(fingerprint, shift):
    return np.int64((fingerprint * _GOLDEN) >> shift)


@njit(cache=True, nogil=True)
def _string_slot(data, start, length, shift):
    return _fingerprint_slot(fingerprint64(data, start, length), shift)


@njit(cache=True, nogil=True)
def _same_bytes(a, a_start, b, b_start, length):
    for k in range(length):
        if a[a_start + k] != b[b_start + k]:
            return False
    return True


@njit(cache=True)
def build_int(keys):
    cap, shift = _capacity(keys.shape[0])
    slots = np.full(cap, -1, np.int64)
    for i in range(keys.shape[0]):
        s = _int_slot(keys[i], shift)
        while slots[s] >= 0:
            s = (s + 1) & (cap - 1)
        slots[s] = i
    return slots


@njit(cache=True)
def build_string(offsets, data):
    n = offsets.shape[0] - 1
    cap, shift = _capacity(n)
    slots = np.full(cap, -1, np.int64)
    for i in range(n):
        s = _string_slot(data, offsets[i], offsets[i + 1] - offsets[i], shift)
        while slots[s] >= 0:
            s = (s + 1) & (cap - 1)
        slots[s] = i
    return slots


@njit(cache=True, nogil=True, inline="always")
def int_value(key, slots, shift, keys, values, default):
    """The value of the integer ``key``, or ``default``."""
    cap = slots.shape[0]
    s = _int_slot(key, shift)
    while slots[s] >= 0:
        if keys[slots[s]] == key:
            return values[slots[s]]
        s = (s + 1) & (cap - 1)
    return default


@njit(cache=True, nogil=True)
def find_int(queries, slots, keys, values, default):
    flat = queries.ravel()
    out = np.empty(flat.shape[0], values.dtype)
    shift = shift_of(slots.shape[0])
    for i in range(flat.shape[0]):
        out[i] = int_value(flat[i], slots, shift, keys, values, default[0])
    return out


@njit(cache=True, nogil=True, inline="always")
def find_key(buf, start, length, fingerprint, slots, shift, key_offsets, key_data):
    """The position of the key equal to the string ``buf[start:start + length]`` (whose
    Fingerprint64 is ``fingerprint``), or -1."""
    cap = slots.shape[0]
    s = _fingerprint_slot(fingerprint, shift)
    while slots[s] >= 0:
        k = slots[s]
        k_start = key_offsets[k]
        if key_offsets[k + 1] - k_start == length and _same_bytes(buf, start, key_data, k_start, length):
            return k
        s = (s + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def find_string(ids, offsets, data, slots, key_offsets, key_data, values, default):
    """``ids``: the queries' positions in their strings (``offsets``, ``data``: see strings.string_at)."""
    flat = ids.ravel()
    out = np.empty(flat.shape[0], values.dtype)
    shift = shift_of(slots.shape[0])
    for i in range(flat.shape[0]):
        buf, start, length = string_at(offsets, data, flat[i])
        k = find_key(buf, start, length, fingerprint64_at(address(buf) + start, length), slots, shift, key_offsets,
                     key_data)
        out[i] = values[k] if k >= 0 else default[0]
    return out


@njit(cache=True, nogil=True, inline="always")
def vocabulary_value(k, fingerprint, values, default, buckets, offset):
    """The id a frozen vocabulary gives a string whose Fingerprint64 is ``fingerprint`` and whose
    key is at ``k`` (``find_key``; -1: none): the key's value, else ``default``. With ``buckets``
    > 0 (a StaticVocabularyTable's out-of-vocabulary buckets) a string that is missing or whose
    value is ``default`` gets fingerprint % buckets + ``offset`` instead (TF's StringToHashBucketFast
    plus the table's size): one fingerprint places it in the index and in its bucket. Callers call
    find_key themselves: when this helper called it, both inlined into their loops, a lookup took
    ~45 ns against ~12 (8 small vocabularies, one thread)."""
    value = values[k] if k >= 0 else default
    if buckets > 0 and value == default:
        value = np.int64(fingerprint % buckets) + offset
    return value


@njit(cache=True, nogil=True)
def find_string_or_bucket(ids, offsets, data, slots, key_offsets, key_data, values, default, num_buckets, offset):
    """A StaticVocabularyTable's lookup (feature_column/vocabulary_oov.py): ``vocabulary_value`` of
    each string."""
    flat = ids.ravel()
    out = np.empty(flat.shape[0], np.int64)
    shift = shift_of(slots.shape[0])
    buckets = np.uint64(num_buckets)
    for i in range(flat.shape[0]):
        buf, start, length = string_at(offsets, data, flat[i])
        fingerprint = fingerprint64_at(address(buf) + start, length)
        k = find_key(buf, start, length, fingerprint, slots, shift, key_offsets, key_data)
        out[i] = vocabulary_value(k, fingerprint, values, default[0], buckets, offset[0])
    return out

"""Kernels read TF's tstrings in place (kernels/strings.py): every tstring form, built by hand
with the layout of tsl/platform/ctstring_internal.h, hashes and compares as TF does."""
import struct

import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.elementwise import string_equals_const
from tf_blade.kernels.farmhash import string_to_hash_bucket_fast
from tf_blade.kernels.siphash import string_to_hash_bucket_strong
from tf_blade.kernels.strings import TSTRING_BYTES, tstrings_from_bytes

SMALL, LARGE, OFFSET, VIEW = 0, 1, 2, 3


def tstrings(values, kinds):
    """A buffer of tstrings (then the OFFSET strings' bytes after them) and the keep-alive of
    the bytes LARGE/VIEW strings point to."""
    n = len(values)
    tail = b"".join(v for v, k in zip(values, kinds) if k == OFFSET)
    buf = np.zeros(n * TSTRING_BYTES + len(tail) + 1, np.uint8)
    keep = []
    at_tail = n * TSTRING_BYTES
    for i, (v, kind) in enumerate(zip(values, kinds)):
        at = i * TSTRING_BYTES
        if kind == SMALL:
            assert len(v) <= 22
            header = bytes([len(v) << 2 | SMALL]) + v
        elif kind == OFFSET:
            header = struct.pack("<III", len(v) << 2 | OFFSET, at_tail - at, 1)
            buf[at_tail:at_tail + len(v)] = np.frombuffer(v, np.uint8)
            at_tail += len(v)
        else:
            data = np.frombuffer(v + b"\0", np.uint8).copy()
            keep.append(data)
            size = len(v) << 2 | kind
            header = struct.pack("<QQQ", size, len(v), data.ctypes.data) if kind == LARGE \
                else struct.pack("<QQQ", size, data.ctypes.data, 0)
        buf[at:at + len(header)] = np.frombuffer(header, np.uint8)
    return buf[:n * TSTRING_BYTES], keep


def _random_strings(rng, n):
    out = []
    for _ in range(n):
        length = int(rng.choice([0, 1, 7, 22, 23, 64, 1000]))
        out.append(rng.integers(0, 256, size=length, dtype=np.uint8).tobytes())
    return out


def test_every_tstring_kind_hashes_like_tf():
    rng = np.random.default_rng()
    values = _random_strings(rng, 200)
    kinds = [int(rng.choice([SMALL, OFFSET, VIEW, LARGE])) if len(v) <= 22 else int(rng.choice([OFFSET, VIEW, LARGE]))
             for v in values]
    raw, keep = tstrings(values, kinds)
    ids = np.arange(len(values), dtype=np.int64)
    got = string_to_hash_bucket_fast(ids, raw, raw[:0], 1 << 40)
    want = tf.strings.to_hash_bucket_fast(tf.constant(values, tf.string), 1 << 40).numpy()
    np.testing.assert_array_equal(got, want)
    key = [123456789, 987654321]
    got = string_to_hash_bucket_strong(ids, raw, raw[:0], 1000, np.uint64(key[0]), np.uint64(key[1]))
    want = tf.strings.to_hash_bucket_strong(tf.constant(values, tf.string), 1000, key).numpy()
    np.testing.assert_array_equal(got, want)
    del keep


@pytest.mark.parametrize("kind", [SMALL, LARGE, OFFSET, VIEW])
def test_compare_reads_each_kind(kind):
    values = [b"", b"abc", b"abd", b"ab"]
    raw, keep = tstrings(values, [kind] * len(values))
    got = string_equals_const(np.arange(4, dtype=np.int64), raw, raw[:0], np.frombuffer(b"abc", np.uint8))
    assert got.tolist() == [False, True, False, False]
    del keep


def test_tstrings_from_bytes_round_trips_through_the_kernels():
    """tf_blade's own layout (constants, numpy bridge): SMALL up to 22 bytes, OFFSET beyond."""
    rng = np.random.default_rng()
    values = _random_strings(rng, 300)
    buf = tstrings_from_bytes(values)
    kinds = {int(buf[i * TSTRING_BYTES] & 3) for i in range(len(values))}
    assert kinds == {SMALL, OFFSET}
    got = string_to_hash_bucket_fast(np.arange(len(values)), buf, buf[:0], 1 << 40)
    np.testing.assert_array_equal(got, tf.strings.to_hash_bucket_fast(tf.constant(values, tf.string), 1 << 40).numpy())


@pytest.mark.parametrize("keep_empty", [False, True])
def test_hash_rows_counts_empty_strings_of_every_kind(keep_empty):
    # hash_rows and hash_every_string list the non-empty strings by each tstring's length
    # (strings.string_length) before hashing them: empty strings of every kind, anywhere in a row,
    # are dropped (a bag) or take the bucket of "" (Keras's Hashing), as TF's ops on the same strings give
    from tf_blade.kernels.string_bag import hash_every_string, hash_rows
    rng = np.random.default_rng()
    values = [v if rng.random() < 0.6 else b"" for v in _random_strings(rng, 240)]
    kinds = [int(rng.choice([SMALL, OFFSET, VIEW, LARGE])) if len(v) <= 22 else int(rng.choice([OFFSET, VIEW, LARGE]))
             for v in values]
    raw, keep = tstrings(values, kinds)
    rows, inner, first = 50, 4, 7  # rows 7..56 of 4 strings
    ids, starts = np.full(rows * inner, -1, np.int64), np.full(rows + 1, -1, np.int64)
    mine = values[first * inner:(first + rows) * inner]
    kept = [v for v in mine if keep_empty or v]
    want = tf.strings.to_hash_bucket_fast(tf.constant(kept, tf.string), 1000).numpy()
    if keep_empty:
        hash_every_string(np.arange(len(values), dtype=np.int64), raw, raw[:0], np.int64(first * inner),
                          np.int64(rows * inner), np.uint64(1000), ids, np.empty_like(ids))
        np.testing.assert_array_equal(ids, want)
        del keep
        return
    hash_rows(np.arange(len(values), dtype=np.int64), raw, raw[:0], np.int64(first), np.int64(rows), np.int64(inner),
              np.uint64(1000), ids, starts)
    np.testing.assert_array_equal(ids[:len(kept)], want)
    counts = [sum(1 for v in mine[r * inner:(r + 1) * inner] if v) for r in range(rows)]
    np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(counts)]))
    del keep

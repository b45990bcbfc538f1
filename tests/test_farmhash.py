"""Bit-exact checks of kernels/farmhash.py against TensorFlow (never against stored hashes)."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

from tf_blade.kernels.farmhash import (
    EMPTY_FINGERPRINT,
    fingerprint64,
    hash_ints_to_bucket,
    string_to_hash_bucket_fast,
)
from tf_blade.kernels.as_string import NO_FLAG, as_string_ints
from tf_blade.kernels.strings import TSTRING_BYTES

NUM_BUCKETS = [1, 2, 7, 100, 2**31 - 1, 2**62]
INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max
INT32_MIN = np.iinfo(np.int32).min
INT32_MAX = np.iinfo(np.int32).max


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def make_pool(strings):
    """List of bytes -> (offsets int64[n+1], data uint8)."""
    lengths = np.array([len(s) for s in strings], dtype=np.int64)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(strings), dtype=np.uint8).copy()
    return offsets, data


def tf_strings(strings):
    # An object array keeps trailing zero bytes (a fixed-width 'S' array would strip them).
    t = tf.constant(np.array(strings, dtype=object), dtype=tf.string)
    # Guard the test itself: TF must see exactly the bytes we hash.
    np.testing.assert_array_equal(tf.strings.length(t).numpy(), [len(s) for s in strings])
    return t


def tf_buckets(strings, num_buckets):
    return tf.strings.to_hash_bucket_fast(tf_strings(strings), num_buckets).numpy()


def tf_fingerprints(strings):
    """Raw Fingerprint64 values: tf.fingerprint gives them as 8 little-endian bytes per row."""
    fp = tf.fingerprint(tf_strings(strings), method="farmhash64").numpy()
    return fp.view("<u8").ravel()


def random_strings(rng, lengths):
    out = []
    for n in lengths:
        b = rng.integers(0, 256, size=n, dtype=np.uint8)
        # Make zero bytes and high (non-ASCII) bytes certain, not just likely.
        if n >= 2:
            b[rng.integers(0, n)] = 0
            b[rng.integers(0, n)] = 0xFF
        out.append(b.tobytes())
    return out


def every_string(offsets):
    return np.arange(len(offsets) - 1, dtype=np.int64)


def check_strings(strings, num_buckets):
    offsets, data = make_pool(strings)
    got = string_to_hash_bucket_fast(every_string(offsets), offsets, data, num_buckets)
    assert got.dtype == np.int64
    want = tf_buckets(strings, num_buckets) if strings else np.zeros(0, np.int64)
    np.testing.assert_array_equal(got, want)


def tf_ints_as_string(values, dtype):
    return tf.strings.as_string(tf.constant(values, dtype=dtype))


def check_ints(values, num_buckets):
    dtype = tf.int64 if values.dtype == np.int64 else tf.int32
    got = hash_ints_to_bucket(values, num_buckets)
    assert got.dtype == np.int64
    want = tf.strings.to_hash_bucket_fast(tf_ints_as_string(values, dtype), num_buckets).numpy()
    np.testing.assert_array_equal(got, want)


def special_ints():
    return np.array([0, -1, 1, 9, 10, -9, -10, 99, 100, INT32_MIN, INT32_MAX,
                     INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1,
                     10**18, -(10**18), 10**18 - 1], dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# fingerprint64 (raw 64-bit value, compared with tf.fingerprint)
# ---------------------------------------------------------------------------------------------

def test_fingerprint64_all_lengths_0_to_300():
    rng = np.random.default_rng(0)
    for rep in range(3):
        strings = random_strings(rng, range(301))
        want = tf_fingerprints(strings)
        for n, s in enumerate(strings):
            got = fingerprint64(np.frombuffer(s, np.uint8).copy(), 0, len(s))
            assert int(got) == int(want[n]), f"length {n}, rep {rep}"


def test_empty_fingerprint_is_tfs():
    # hash_rows gives padding "" this constant's bucket without hashing it
    assert int(EMPTY_FINGERPRINT) == int(tf_fingerprints([b""])[0])
    assert int(fingerprint64(np.zeros(1, np.uint8), 0, 0)) == int(EMPTY_FINGERPRINT)


@pytest.mark.parametrize("keep_empty", [False, True])
def test_hash_rows_inlined_fingerprint_all_lengths(keep_empty):
    # hash_rows and hash_every_string (every feature layer's hashing) inline their own
    # Fingerprint64: every FarmHash length branch, SMALL and OFFSET tstrings, rows of 3, against
    # TF's buckets; empty strings dropped (a bag's rows) or bucketed (Keras's)
    from tf_blade.kernels.string_bag import hash_every_string, hash_rows
    from tf_blade.kernels.strings import tstrings_from_bytes
    rng = np.random.default_rng(2)
    strings = random_strings(rng, range(301)) + [b""] * 2  # 303 strings: 101 rows of 3
    strings = [strings[i] for i in rng.permutation(len(strings))]  # the empty ones anywhere
    raw = tstrings_from_bytes(strings)
    for nb in (1, 7, 2**62):
        ids = np.full(len(strings), -1, np.int64)
        if keep_empty:
            hash_every_string(np.arange(len(strings)), raw, raw[:0], np.int64(0), np.int64(len(strings)),
                              np.uint64(nb), ids, np.empty_like(ids))
            np.testing.assert_array_equal(ids, tf_buckets(strings, nb))
            continue
        starts = np.full(102, -1, np.int64)
        hash_rows(np.arange(len(strings)), raw, raw[:0], np.int64(0), np.int64(101), np.int64(3),
                  np.uint64(nb), ids, starts)
        kept = [s for s in strings if s]
        np.testing.assert_array_equal(ids[:len(kept)], tf_buckets(kept, nb))
        counts = [sum(1 for s in strings[3 * r:3 * r + 3] if s) for r in range(101)]
        np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(counts)]))


def test_fingerprint64_nonzero_start():
    # Same strings embedded at odd offsets in one buffer: start/length must be honoured and
    # neighbouring bytes must not leak in.
    rng = np.random.default_rng(1)
    strings = random_strings(rng, range(0, 300, 7))
    want = tf_fingerprints(strings)
    pad = rng.integers(0, 256, size=13, dtype=np.uint8).tobytes()
    buf = bytearray()
    starts = []
    for s in strings:
        buf += pad
        starts.append(len(buf))
        buf += s
    buf += pad
    data = np.frombuffer(bytes(buf), np.uint8).copy()
    for s, start, w in zip(strings, starts, want):
        assert int(fingerprint64(data, start, len(s))) == int(w), f"length {len(s)}"


def test_fingerprint64_edge_bytes():
    strings = [b"", b"\x00", b"\x00" * 8, b"\xff" * 16, b"\x00" * 17, b"\xff" * 33,
               b"\x00" * 64, b"\xff" * 65, b"\x00" * 128, b"\xff" * 129, "héllo wörld ✓".encode()]
    want = tf_fingerprints(strings)
    for s, w in zip(strings, want):
        assert int(fingerprint64(np.frombuffer(s, np.uint8).copy(), 0, len(s))) == int(w)


# ---------------------------------------------------------------------------------------------
# string_to_hash_bucket_fast
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_buckets", NUM_BUCKETS)
def test_buckets_all_lengths_0_to_300(num_buckets):
    rng = np.random.default_rng(num_buckets % 1000)
    check_strings(random_strings(rng, range(301)), num_buckets)


@pytest.mark.parametrize("num_buckets", NUM_BUCKETS)
def test_buckets_empty_string(num_buckets):
    check_strings([b""], num_buckets)
    check_strings([b"", b"a", b""], num_buckets)


def test_buckets_of_chosen_ids():
    # A filtered tensor (padding dropped, rows reordered, repeats) hashes only the ids it holds.
    strings = [b"", b"a", b"bb", b"", "\u00e9t\u00e9".encode(), b"x" * 300]
    offsets, data = make_pool(strings)
    ids = np.array([5, 1, 1, 4, 2], np.int64)
    got = string_to_hash_bucket_fast(ids, offsets, data, 977)
    np.testing.assert_array_equal(got, tf_buckets([strings[i] for i in ids], 977))


def test_buckets_empty_batch():
    offsets = np.zeros(1, dtype=np.int64)
    data = np.zeros(0, dtype=np.uint8)
    got = string_to_hash_bucket_fast(every_string(offsets), offsets, data, 100)
    assert got.dtype == np.int64 and got.shape == (0,)
    want = tf.strings.to_hash_bucket_fast(tf.constant([], dtype=tf.string), 100).numpy()
    assert want.shape == (0,)


@pytest.mark.parametrize("num_buckets", [7, 2**62])
def test_buckets_1mb_string(num_buckets):
    rng = np.random.default_rng(2)
    big = rng.integers(0, 256, size=2**20, dtype=np.uint8).tobytes()
    # Exactly 1 MiB (multiple of 64), and lengths leaving 1 and 63 bytes for the tail block.
    check_strings([big, big[:-1], big + b"\x00", big[:-63]], num_buckets)
    want = tf_fingerprints([big])
    assert int(fingerprint64(np.frombuffer(big, np.uint8).copy(), 0, len(big))) == int(want[0])


@settings(max_examples=50, deadline=None)
@given(strings=st.lists(st.binary(max_size=200), max_size=20),
       num_buckets=st.sampled_from(NUM_BUCKETS))
def test_buckets_hypothesis(strings, num_buckets):
    check_strings(strings, num_buckets)


# ---------------------------------------------------------------------------------------------
# Integers: AsString's default format (as_string_ints) and hash_ints_to_bucket
# ---------------------------------------------------------------------------------------------

def small_tstrings_to_list(buf):
    """Decimal texts fit inline: every tstring is SMALL (type bits 0, size in byte 0 >> 2)."""
    out = []
    for at in range(0, len(buf), TSTRING_BYTES):
        assert buf[at] & 3 == 0
        out.append(buf[at + 1:at + 1 + (int(buf[at]) >> 2)].tobytes())
    return out


def int_to_decimal_tstrings(values):
    return as_string_ints(values, -1, NO_FLAG, np.zeros(64, np.uint8))


def check_decimal_tstrings(values):
    dtype = tf.int64 if values.dtype == np.int64 else tf.int32
    buf = int_to_decimal_tstrings(values)
    assert buf.dtype == np.uint8 and buf.shape == (len(values) * TSTRING_BYTES,)
    want = list(tf_ints_as_string(values, dtype).numpy())
    assert small_tstrings_to_list(buf) == want


def test_decimal_special_int64():
    check_decimal_tstrings(special_ints())


def test_decimal_random():
    rng = np.random.default_rng(3)
    check_decimal_tstrings(rng.integers(INT64_MIN, INT64_MAX, size=2000, dtype=np.int64,
                                        endpoint=True))
    check_decimal_tstrings(rng.integers(INT32_MIN, INT32_MAX, size=2000, dtype=np.int32,
                                        endpoint=True))
    check_decimal_tstrings(np.array([0, -1, INT32_MIN, INT32_MAX], dtype=np.int32))


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_decimal_empty(dtype):
    assert int_to_decimal_tstrings(np.zeros(0, dtype=dtype)).shape == (0,)


@pytest.mark.parametrize("num_buckets", NUM_BUCKETS)
def test_hash_ints_special(num_buckets):
    check_ints(special_ints(), num_buckets)
    check_ints(np.array([0, -1, INT32_MIN, INT32_MAX], dtype=np.int32), num_buckets)


@pytest.mark.parametrize("num_buckets", NUM_BUCKETS)
def test_hash_ints_random(num_buckets):
    rng = np.random.default_rng(4 + num_buckets % 1000)
    # Mix magnitudes so every digit count (and sign) occurs, not just ~19-digit values.
    mags = rng.integers(0, 19, size=3000)
    v64 = (rng.integers(0, 10, size=3000) * 10 ** mags.astype(np.int64)
           + rng.integers(0, 10**9, size=3000)) * rng.choice([-1, 1], size=3000)
    check_ints(v64.astype(np.int64), num_buckets)
    check_ints(rng.integers(INT64_MIN, INT64_MAX, size=2000, dtype=np.int64, endpoint=True),
               num_buckets)
    check_ints(rng.integers(INT32_MIN, INT32_MAX, size=2000, dtype=np.int32, endpoint=True),
               num_buckets)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_hash_ints_empty(dtype):
    got = hash_ints_to_bucket(np.zeros(0, dtype=dtype), 100)
    assert got.dtype == np.int64 and got.shape == (0,)


def test_hash_ints_matches_pool_path():
    # The fused path must equal pool + string_to_hash_bucket_fast (both checked against TF
    # above; this pins them to each other over a larger sample).
    rng = np.random.default_rng(5)
    v = rng.integers(INT64_MIN, INT64_MAX, size=20000, dtype=np.int64, endpoint=True)
    v[:18] = special_ints()
    buf = int_to_decimal_tstrings(v)
    np.testing.assert_array_equal(hash_ints_to_bucket(v, 2**62),
                                  string_to_hash_bucket_fast(np.arange(len(v)), buf, buf[:0], 2**62))


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.integers(min_value=INT64_MIN, max_value=INT64_MAX), max_size=30),
       num_buckets=st.sampled_from(NUM_BUCKETS))
def test_hash_ints_hypothesis(values, num_buckets):
    arr = np.array(values, dtype=np.int64)
    check_ints(arr, num_buckets)
    check_decimal_tstrings(arr)

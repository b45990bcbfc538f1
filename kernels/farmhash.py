"""FarmHash Fingerprint64 and the TF ops built on it: StringToHashBucketFast, and AsString(int)
then hashing fused.

TensorFlow's ``StringToHashBucketFast`` returns ``Fingerprint64(s) % num_buckets``, where
``Fingerprint64`` is FarmHash's ``farmhashna::Hash64`` (a CityHash64 relative; seed 81 for
inputs over 64 bytes). This file reimplements it bit-exactly on uint8 NumPy buffers.

Numba typing note: in Numba, ``uint64 op int64`` (including Python int literals) promotes to
float64, silently destroying the hash. Every constant, length and shift amount below is
therefore an explicit ``np.uint64``; positions into ``data`` stay int64 and are only used
for indexing.

Strings arrive as ``(ids, offsets, data)`` and are read through ``strings.string_at``: a pool
(string i is ``data[offsets[i]:offsets[i+1]]``) or TF's tstrings in place.
"""
import numpy as np
from numba import njit

from .strings import string_at

K0 = np.uint64(0xC3A5C85C97CB3127)
K1 = np.uint64(0xB492B66FBE98F273)
K2 = np.uint64(0x9AE16A3B2F90404F)
K_MUL = np.uint64(0x9DDFEA08EB382D69)
EMPTY_FINGERPRINT = K2  # Fingerprint64(""): HashLen0to16 returns k2 when there are no bytes
SEED = np.uint64(81)

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U8 = np.uint64(8)
_U9 = np.uint64(9)
_U47 = np.uint64(47)
_U63 = np.uint64(63)
_U113 = np.uint64(113)
_UFF = np.uint64(0xFF)

# Longest decimal text of an int64: "-9223372036854775808" is 20 bytes.
_MAX_INT_DIGITS = 20


# ---------------------------------------------------------------------------------------------
# Primitive helpers. inline="always": a real call per fetch passes (and refcounts) the byte
# array, which made hashing ~2x slower.
# ---------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def fetch64(data, i):
    """Little-endian, unaligned 64-bit load of data[i:i+8] (LLVM folds this into one load)."""
    r = _U0
    for k in range(8):
        r |= np.uint64(data[i + k]) << np.uint64(8 * k)
    return r


@njit(cache=True, nogil=True, inline="always")
def fetch32(data, i):
    """Little-endian, unaligned 32-bit load of data[i:i+4], zero-extended to uint64."""
    r = _U0
    for k in range(4):
        r |= np.uint64(data[i + k]) << np.uint64(8 * k)
    return r


@njit(cache=True, nogil=True, inline="always")
def rotate(val, shift):
    """Rotate right; ``shift`` is always in 1..63 here, so no shift-by-64 case arises."""
    s = np.uint64(shift)
    return (val >> s) | (val << (np.uint64(64) - s))


@njit(cache=True, nogil=True, inline="always")
def shift_mix(val):
    return val ^ (val >> _U47)


@njit(cache=True, nogil=True, inline="always")
def hash_len16(u, v, mul):
    """Murmur-inspired mix of two 64-bit values into one."""
    a = (u ^ v) * mul
    a ^= a >> _U47
    b = (v ^ a) * mul
    b ^= b >> _U47
    return b * mul


@njit(cache=True, nogil=True, inline="always")
def weak_hash_len32_with_seeds(data, i, a, b):
    """Hash data[i:i+32] with seeds a and b; returns a pair (as a tuple)."""
    w = fetch64(data, i)
    x = fetch64(data, i + 8)
    y = fetch64(data, i + 16)
    z = fetch64(data, i + 24)
    a += w
    b = rotate(b + a + z, 21)
    c = a
    a += x
    a += y
    b += rotate(a, 44)
    return a + z, b + c


# ---------------------------------------------------------------------------------------------
# Length-class hashes (s = start offset into data, n = length as uint64)
# ---------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def hash_len0to16(data, s, n):
    if n >= _U8:
        mul = K2 + n * _U2
        a = fetch64(data, s) + K2
        b = fetch64(data, s + np.int64(n) - 8)
        c = rotate(b, 37) * mul + a
        d = (rotate(a, 25) + b) * mul
        return hash_len16(c, d, mul)
    if n >= np.uint64(4):
        mul = K2 + n * _U2
        a = fetch32(data, s)
        return hash_len16(n + (a << _U3), fetch32(data, s + np.int64(n) - 4), mul)
    if n > _U0:
        # Values stay far below 2**32, so C++'s uint32 intermediates never wrap.
        a = np.uint64(data[s])
        b = np.uint64(data[s + np.int64(n >> _U1)])
        c = np.uint64(data[s + np.int64(n) - 1])
        y = a + (b << _U8)
        z = n + (c << _U2)
        return shift_mix((y * K2) ^ (z * K0)) * K2
    return K2


@njit(cache=True, nogil=True, inline="always")
def hash_len17to32(data, s, n):
    e = s + np.int64(n)
    mul = K2 + n * _U2
    a = fetch64(data, s) * K1
    b = fetch64(data, s + 8)
    c = fetch64(data, e - 8) * mul
    d = fetch64(data, e - 16) * K2
    return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d,
                      a + rotate(b + K2, 18) + c, mul)


@njit(cache=True, nogil=True, inline="always")
def hash_len33to64(data, s, n):
    e = s + np.int64(n)
    mul = K2 + n * _U2
    a = fetch64(data, s) * K2
    b = fetch64(data, s + 8)
    c = fetch64(data, e - 8) * mul
    d = fetch64(data, e - 16) * K2
    y = rotate(a + b, 43) + rotate(c, 30) + d
    z = hash_len16(y, a + rotate(b + K2, 18) + c, mul)
    e1 = fetch64(data, s + 16) * mul
    f = fetch64(data, s + 24)
    g = (y + fetch64(data, e - 32)) * mul
    h = (z + fetch64(data, e - 24)) * mul
    return hash_len16(rotate(e1 + f, 43) + rotate(g, 30) + h,
                      e1 + rotate(f + a, 18) + g, mul)


@njit(cache=True, nogil=True, inline="always")
def _hash_len65plus(data, s, n):
    # Internal state is 56 bytes: v (pair), w (pair), x, y, z.
    x = SEED
    y = SEED * K1 + _U113
    z = shift_mix(y * K2 + _U113) * K2
    v0 = _U0
    v1 = _U0
    w0 = _U0
    w1 = _U0
    x = x * K2 + fetch64(data, s)

    # Whole 64-byte blocks, leaving 1..64 bytes for the final block (which re-reads the last
    # 64 bytes of input, overlapping the loop's tail).
    tail = (n - _U1) & _U63
    end = s + np.int64((n - _U1) >> np.uint64(6)) * 64
    last64 = s + np.int64(n) - 64
    p = s
    while True:
        x = rotate(x + y + v0 + fetch64(data, p + 8), 37) * K1
        y = rotate(y + v1 + fetch64(data, p + 48), 42) * K1
        x ^= w1
        y += v0 + fetch64(data, p + 40)
        z = rotate(z + w0, 33) * K1
        v0, v1 = weak_hash_len32_with_seeds(data, p, v1 * K1, x + w0)
        w0, w1 = weak_hash_len32_with_seeds(data, p + 32, z + w1, y + fetch64(data, p + 16))
        x, z = z, x
        p += 64
        if p == end:
            break

    mul = K1 + ((z & _UFF) << _U1)
    p = last64
    w0 += tail
    v0 += w0
    w0 += v0
    x = rotate(x + y + v0 + fetch64(data, p + 8), 37) * mul
    y = rotate(y + v1 + fetch64(data, p + 48), 42) * mul
    x ^= w1 * _U9
    y += v0 * _U9 + fetch64(data, p + 40)
    z = rotate(z + w0, 33) * mul
    v0, v1 = weak_hash_len32_with_seeds(data, p, v1 * mul, x + w0)
    w0, w1 = weak_hash_len32_with_seeds(data, p + 32, z + w1, y + fetch64(data, p + 16))
    x, z = z, x
    return hash_len16(hash_len16(v0, w0, mul) + shift_mix(y) * K0 + z,
                      hash_len16(v1, w1, mul) + x, mul)


# ---------------------------------------------------------------------------------------------
# Public kernels
# ---------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def fingerprint64(data, start, length):
    """FarmHash Fingerprint64 (farmhashna::Hash64) of data[start:start+length] as np.uint64.

    ``data`` is a 1-D uint8 array; the caller guarantees the range is in bounds.
    """
    s = np.int64(start)
    n = np.uint64(length)
    if n <= np.uint64(32):
        if n <= np.uint64(16):
            return hash_len0to16(data, s, n)
        return hash_len17to32(data, s, n)
    if n <= np.uint64(64):
        return hash_len33to64(data, s, n)
    return _hash_len65plus(data, s, n)


# The same, inlined into its caller's Numba IR, for the loops over many strings: without a call
# and the array's exploded fields passed per string, hash_rows (every feature layer's hashing)
# runs 7-11% faster and string_to_hash_bucket_fast 36%. Each inlined copy adds ~1 s to its
# caller's cold compile. hash_ints_to_bucket keeps the call: inlined there it ran 1.5x slower.
fingerprint64_inlined = njit(cache=True, nogil=True, inline="always")(fingerprint64.py_func)


@njit(cache=True, nogil=True)
def string_to_hash_bucket_fast(ids, offsets, data, num_buckets):
    """TF StringToHashBucketFast of the pool strings ``ids`` (flat): Fingerprint64(s) % num_buckets
    (int64). Hashes only the strings a tensor refers to, not the whole pool (a filtered column
    shares its input's pool, padding and all).

    ``num_buckets`` must be >= 1 (TF enforces this on the op attribute); ids index the pool.
    """
    out = np.empty(ids.shape[0], dtype=np.int64)
    nb = np.uint64(num_buckets)
    for i in range(ids.shape[0]):
        buf, start, length = string_at(offsets, data, ids[i])
        h = fingerprint64_inlined(buf, start, length)
        out[i] = np.int64(h % nb)
    return out


@njit(cache=True, nogil=True, inline="always")
def _format_int(v, buf):
    """Write the decimal text of int64 ``v`` right-aligned into ``buf`` (len 20).

    Returns the start index; the text is buf[start:20]. Works in uint64 magnitude so that
    INT64_MIN (whose negation overflows int64) is handled.
    """
    neg = v < 0
    if neg:
        mag = np.uint64(-(v + 1)) + _U1
    else:
        mag = np.uint64(v)
    ten = np.uint64(10)
    pos = _MAX_INT_DIGITS
    while True:
        pos -= 1
        buf[pos] = np.uint8(mag % ten) + np.uint8(48)  # '0'
        mag //= ten
        if mag == _U0:
            break
    if neg:
        pos -= 1
        buf[pos] = np.uint8(45)  # '-'
    return pos


@njit(cache=True, nogil=True)
def hash_ints_to_bucket(values, num_buckets):
    """AsString(int) then StringToHashBucketFast, fused: no string pool is built.

    Each value is formatted into one reused 20-byte buffer and fingerprinted in place.
    """
    n = values.shape[0]
    out = np.empty(n, dtype=np.int64)
    buf = np.empty(_MAX_INT_DIGITS, dtype=np.uint8)
    nb = np.uint64(num_buckets)
    for i in range(n):
        start = _format_int(np.int64(values[i]), buf)
        h = fingerprint64(buf, start, _MAX_INT_DIGITS - start)
        out[i] = np.int64(h % nb)
    return out

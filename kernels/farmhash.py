"""FarmHash Fingerprint64 and the TF ops built on it: StringToHashBucketFast, and AsString(int)
then hashing fused.

TensorFlow's ``StringToHashBucketFast`` returns ``Fingerprint64(s) % num_buckets``, where
``Fingerprint64`` is FarmHash's ``farmhashna::Hash64`` (a CityHash64 relative; seed 81 for
inputs over 64 bytes). This file reimplements it bit-exactly over bytes in memory: the
``length`` bytes at an int64 address (``fingerprint64_at``), or a uint8 NumPy buffer's range
(``fingerprint64``).

Numba typing note: in Numba, ``uint64 op int64`` (including Python int literals) promotes to
float64, silently destroying the hash. Every constant and length below is therefore an explicit
``np.uint64``; addresses stay int64 and are only used for loads.

Strings arrive as ``(ids, offsets, data)`` and are read through ``strings.string_at``: a pool
(string i is ``data[offsets[i]:offsets[i+1]]``) or TF's tstrings in place.
"""
import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..runtime.abi import address, load8, load32, load64
from .strings import string_at

if sys.byteorder != "little":  # FarmHash reads words little-endian; the loads below are native
    raise ImportError("tf_blade's FarmHash kernels need a little-endian machine")

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


# Memory: the hash reads bytes at an int64 address (runtime/abi.py's ``load*``), so its helpers
# take only integers: calls cost no array arguments or reference counts and LLVM inlines them.
# They were Numba-level inline="always" helpers over the byte array, which re-typed each of ~40
# inlined copies: 5.1 s of hash_rows' cold compile.


# ---------------------------------------------------------------------------------------------
# Mixing helpers (integers only)
# ---------------------------------------------------------------------------------------------

@intrinsic
def rotate(typingctx, val, shift):
    """Rotate the uint64 ``val`` right by ``shift``, always 1..63 here. An intrinsic, not a jitted
    function: each literal shift would be a Numba type of its own, compiling it nine times."""
    if val != types.uint64 or not isinstance(shift, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        s = context.cast(builder, args[1], sig.args[1], types.uint64)
        return builder.or_(builder.lshr(v, s), builder.shl(v, builder.sub(ir.Constant(v.type, 64), s)))

    return types.uint64(val, shift), codegen


# The three mixers are Numba-inlined into their callers: each compiled alone cost Numba's whole
# pipeline and a machine-code emit of its own (the feature layer's blocks task, which hashes,
# compiled 0.3-1.3 s faster in four alternating pairs).
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
def weak_hash_len32_with_seeds(p, a, b):
    """Hash the 32 bytes at address p with seeds a and b; returns a pair (as a tuple)."""
    w = load64(p)
    x = load64(p + 8)
    y = load64(p + 16)
    z = load64(p + 24)
    a += w
    b = rotate(b + a + z, 21)
    c = a
    a += x
    a += y
    b += rotate(a, 44)
    return a + z, b + c


# ---------------------------------------------------------------------------------------------
# Length-class hashes (s = address of the first byte, n = length as uint64)
# ---------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def hash_len0to16(s, n):
    if n >= _U8:
        mul = K2 + n * _U2
        a = load64(s) + K2
        b = load64(s + np.int64(n) - 8)
        c = rotate(b, 37) * mul + a
        d = (rotate(a, 25) + b) * mul
        return hash_len16(c, d, mul)
    if n >= np.uint64(4):
        mul = K2 + n * _U2
        a = load32(s)
        return hash_len16(n + (a << _U3), load32(s + np.int64(n) - 4), mul)
    if n > _U0:
        # Values stay far below 2**32, so C++'s uint32 intermediates never wrap.
        a = load8(s)
        b = load8(s + np.int64(n >> _U1))
        c = load8(s + np.int64(n) - 1)
        y = a + (b << _U8)
        z = n + (c << _U2)
        return shift_mix((y * K2) ^ (z * K0)) * K2
    return K2


@njit(cache=True, nogil=True)
def hash_len17to32(s, n):
    e = s + np.int64(n)
    mul = K2 + n * _U2
    a = load64(s) * K1
    b = load64(s + 8)
    c = load64(e - 8) * mul
    d = load64(e - 16) * K2
    return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d,
                      a + rotate(b + K2, 18) + c, mul)


@njit(cache=True, nogil=True)
def hash_len33to64(s, n):
    e = s + np.int64(n)
    mul = K2 + n * _U2
    a = load64(s) * K2
    b = load64(s + 8)
    c = load64(e - 8) * mul
    d = load64(e - 16) * K2
    y = rotate(a + b, 43) + rotate(c, 30) + d
    z = hash_len16(y, a + rotate(b + K2, 18) + c, mul)
    e1 = load64(s + 16) * mul
    f = load64(s + 24)
    g = (y + load64(e - 32)) * mul
    h = (z + load64(e - 24)) * mul
    return hash_len16(rotate(e1 + f, 43) + rotate(g, 30) + h,
                      e1 + rotate(f + a, 18) + g, mul)


@njit(cache=True, nogil=True)
def _hash_len65plus(s, n):
    # Internal state is 56 bytes: v (pair), w (pair), x, y, z.
    x = SEED
    y = SEED * K1 + _U113
    z = shift_mix(y * K2 + _U113) * K2
    v0 = _U0
    v1 = _U0
    w0 = _U0
    w1 = _U0
    x = x * K2 + load64(s)

    # Whole 64-byte blocks, leaving 1..64 bytes for the final block (which re-reads the last
    # 64 bytes of input, overlapping the loop's tail).
    tail = (n - _U1) & _U63
    end = s + np.int64((n - _U1) >> np.uint64(6)) * 64
    last64 = s + np.int64(n) - 64
    p = s
    while True:
        x = rotate(x + y + v0 + load64(p + 8), 37) * K1
        y = rotate(y + v1 + load64(p + 48), 42) * K1
        x ^= w1
        y += v0 + load64(p + 40)
        z = rotate(z + w0, 33) * K1
        v0, v1 = weak_hash_len32_with_seeds(p, v1 * K1, x + w0)
        w0, w1 = weak_hash_len32_with_seeds(p + 32, z + w1, y + load64(p + 16))
        x, z = z, x
        p += 64
        if p == end:
            break

    mul = K1 + ((z & _UFF) << _U1)
    p = last64
    w0 += tail
    v0 += w0
    w0 += v0
    x = rotate(x + y + v0 + load64(p + 8), 37) * mul
    y = rotate(y + v1 + load64(p + 48), 42) * mul
    x ^= w1 * _U9
    y += v0 * _U9 + load64(p + 40)
    z = rotate(z + w0, 33) * mul
    v0, v1 = weak_hash_len32_with_seeds(p, v1 * mul, x + w0)
    w0, w1 = weak_hash_len32_with_seeds(p + 32, z + w1, y + load64(p + 16))
    x, z = z, x
    return hash_len16(hash_len16(v0, w0, mul) + shift_mix(y) * K0 + z,
                      hash_len16(v1, w1, mul) + x, mul)


@njit(cache=True, nogil=True, inline="always")
def fingerprint64_at(s, length):
    """FarmHash Fingerprint64 of the ``length`` bytes at address ``s`` (int64), as np.uint64."""
    n = np.uint64(length)
    if n <= np.uint64(32):
        if n <= np.uint64(16):
            return hash_len0to16(s, n)
        return hash_len17to32(s, n)
    if n <= np.uint64(64):
        return hash_len33to64(s, n)
    return _hash_len65plus(s, n)


# ---------------------------------------------------------------------------------------------
# Public kernels
# ---------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def fingerprint64(data, start, length):
    """FarmHash Fingerprint64 (farmhashna::Hash64) of data[start:start+length] as np.uint64.

    ``data`` is a 1-D uint8 array; the caller guarantees the range is in bounds.
    """
    return fingerprint64_at(address(data) + np.int64(start), length)


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
        h = fingerprint64_at(address(buf) + start, length)
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
def int_buckets(values, n, num_buckets, out):
    """out[j] = the bucket of AsString(values[j]) among ``num_buckets`` for j < n (``out`` may be
    ``values``): each value is formatted into one reused 20-byte buffer and fingerprinted in place."""
    buf = np.empty(_MAX_INT_DIGITS, dtype=np.uint8)
    nb = np.uint64(num_buckets)
    for j in range(n):
        start = _format_int(np.int64(values[j]), buf)
        out[j] = np.int64(fingerprint64_at(address(buf) + start, _MAX_INT_DIGITS - start) % nb)


@njit(cache=True, nogil=True)
def hash_ints_to_bucket(values, num_buckets):
    """AsString(int) then StringToHashBucketFast, fused: no string pool is built (``int_buckets``)."""
    out = np.empty(values.shape[0], dtype=np.int64)
    int_buckets(values, values.shape[0], num_buckets, out)
    return out

"""SipHash-2-4 and TF's StringToHashBucketStrong built on it.

TensorFlow's ``StringToHashBucketStrong(key=[k0, k1])`` returns
``SipHash-2-4(key, s) % num_buckets`` (tensorflow/core/platform/strong_hash.h calls HighwayHash's
SipHash with the two int64 key attrs read as uint64s). Keras ``Hashing(salt=...)`` lowers to it.

As in farmhash.py, every constant and shift amount is an explicit np.uint64: in Numba
``uint64 op int64`` promotes to float64. Strings arrive as a pool (see farmhash.py).
"""
import numpy as np
from numba import njit

from ..runtime.abi import address, load64
from .strings import string_at

_C0 = np.uint64(0x736F6D6570736575)  # "somepseudorandomlygeneratedbytes"
_C1 = np.uint64(0x646F72616E646F6D)
_C2 = np.uint64(0x6C7967656E657261)
_C3 = np.uint64(0x7465646279746573)
_U8 = np.uint64(8)
_U56 = np.uint64(56)
_UFF = np.uint64(0xFF)


@njit(cache=True, nogil=True, inline="always")
def _rotl(x, b):
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@njit(cache=True, nogil=True, inline="always")
def _rounds(v0, v1, v2, v3, n):
    for _ in range(n):
        v0 += v1
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 += v3
        v3 = _rotl(v3, 16) ^ v2
        v0 += v3
        v3 = _rotl(v3, 21) ^ v0
        v2 += v1
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@njit(cache=True, nogil=True)
def siphash24(data, start, length, k0, k1):
    """SipHash-2-4 of data[start:start+length] under the key (k0, k1), all uint64."""
    v0, v1, v2, v3 = k0 ^ _C0, k1 ^ _C1, k0 ^ _C2, k1 ^ _C3
    end = start + (length // 8) * 8
    base = address(data)
    for i in range(start, end, 8):
        m = load64(base + i)
        v3 ^= m
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    # Last block: the 0..7 remaining bytes, little-endian, and the length's low byte on top.
    m = (np.uint64(length) & _UFF) << _U56
    for k in range(start + length - end):
        m |= np.uint64(data[end + k]) << (_U8 * np.uint64(k))
    v3 ^= m
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
    v0 ^= m
    v2 ^= _UFF
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


@njit(cache=True, nogil=True)
def string_to_hash_bucket_strong(ids, offsets, data, num_buckets, k0, k1):
    """TF StringToHashBucketStrong of the pool strings ``ids`` (flat): SipHash % num_buckets.
    ``num_buckets`` >= 1 (TF enforces it on the attr); ``k0``/``k1`` are the key as uint64."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    nb = np.uint64(num_buckets)
    for i in range(ids.shape[0]):
        buf, start, length = string_at(offsets, data, ids[i])
        out[i] = np.int64(siphash24(buf, start, length, k0, k1) % nb)
    return out

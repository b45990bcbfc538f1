"""Unique over a 1-D integer vector: values in order of first appearance plus the inverse index.

An open-addressing hash table in flat arrays: no typed-dict overhead, O(n) expected.
"""
import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def unique(x, idx_dtype_example):
    n = x.shape[0]
    cap, bits = 16, 4
    while cap < 2 * n:
        cap *= 2
        bits += 1
    # Fibonacci hashing: the slot is the product's top bits, which depend on every key bit
    # (the low bits of the product ignore high key bits: keys k << 40 would share one slot).
    shift = np.uint64(64 - bits)
    slots = np.full(cap, -1, np.int64)  # position in ``y`` of the key stored there
    y = np.empty(n, x.dtype)
    idx = np.empty(n, idx_dtype_example.dtype)
    count = 0
    for i in range(n):
        key = x[i]
        s = np.int64((np.uint64(np.int64(key)) * _GOLDEN) >> shift)
        while True:
            j = slots[s]
            if j < 0:
                slots[s] = count
                y[count] = key
                idx[i] = count
                count += 1
                break
            if y[j] == key:
                idx[i] = j
                break
            s = (s + 1) & (cap - 1)
    return y[:count].copy(), idx


@njit(cache=True, nogil=True)
def counts_of(idx, n_unique, count_dtype_example):
    """UniqueWithCounts' third output: how often each unique value occurs."""
    counts = np.zeros(n_unique, count_dtype_example.dtype)
    for i in range(idx.shape[0]):
        counts[idx[i]] += 1
    return counts

"""Unique over a 1-D integer vector: values in order of first appearance plus the inverse index.

An open-addressing hash table in flat arrays: no typed-dict overhead, O(n) expected.
"""
import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def unique(x, idx_dtype_example):
    n = x.shape[0]
    cap = 16
    while cap < 2 * n:
        cap *= 2
    mask = np.uint64(cap - 1)
    slots = np.full(cap, -1, np.int64)  # position in ``y`` of the key stored there
    y = np.empty(n, x.dtype)
    idx = np.empty(n, idx_dtype_example.dtype)
    count = 0
    for i in range(n):
        key = x[i]
        h = (np.uint64(np.int64(key)) * _GOLDEN) >> np.uint64(17)
        s = np.int64(h & mask)
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

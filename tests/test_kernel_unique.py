"""kernels/unique.py against tf.raw_ops.Unique: values in first-appearance order and the inverse
index, exact, for random vectors (ids near the int64 limits, negatives, structured keys)."""
import time

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

from tf_blade.kernels.unique import unique

I64 = np.iinfo(np.int64)
KEY_DTYPES = [np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16]


def check(x, idx_dtype=np.int32):
    y, idx = unique(x, np.empty(0, idx_dtype))
    want = tf.raw_ops.Unique(x=tf.constant(x), out_idx=tf.as_dtype(idx_dtype))
    wy, widx = want.y.numpy(), want.idx.numpy()
    assert y.dtype == wy.dtype == x.dtype and idx.dtype == widx.dtype == idx_dtype
    np.testing.assert_array_equal(y, wy)
    np.testing.assert_array_equal(idx, widx)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.integers(I64.min, I64.max), max_size=60),
       repeats=st.integers(1, 4), idx64=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_unique_int64_hypothesis(values, repeats, idx64, seed):
    x = np.array(values * repeats, np.int64)
    np.random.default_rng(seed).shuffle(x)
    check(x, np.int64 if idx64 else np.int32)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", KEY_DTYPES)
def test_unique_random(rng, dtype, idx_dtype):
    info = np.iinfo(dtype)
    for _ in range(20):
        n = int(rng.integers(0, 2000))
        pool_size = int(rng.integers(1, 300))
        pool = rng.integers(info.min, info.max, size=pool_size, dtype=dtype, endpoint=True)
        pool[: min(4, pool_size)] = [info.min, info.max, 0, info.max - 1][: min(4, pool_size)]
        check(pool[rng.integers(0, pool_size, n)], idx_dtype)


def test_unique_edges():
    check(np.zeros(0, np.int64))
    check(np.zeros(0, np.int32), np.int64)
    check(np.array([7], np.int64))
    check(np.array([-1, -1, -1], np.int64))
    check(np.array([I64.min, I64.max, I64.min, 0, -1, I64.max, I64.min + 1], np.int64))
    check(np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0], np.int32))


@pytest.mark.parametrize("shift", [0, 17, 24, 32, 40, 47, 56])
def test_unique_structured_keys(rng, shift):
    # Keys sharing their low bits (multiples of 2**shift), sequential and negated.
    n = 3000 if shift < 56 else 200
    base = np.arange(n, dtype=np.int64)
    x = np.concatenate([base << shift, -(base << shift), (base << shift) | 1])
    rng.shuffle(x)
    check(x, np.int64)


def test_unique_structured_keys_stay_fast(rng):
    # Keys that differ only in high bits must not pile up in one hash slot (quadratic probing).
    n = 60_000
    structured = np.arange(n, dtype=np.int64) << 40
    scattered = rng.integers(I64.min, I64.max, n, dtype=np.int64)
    marker = np.empty(0, np.int64)
    unique(structured[:10], marker)  # compile
    t_scattered = min(_timed(lambda: unique(scattered, marker)) for _ in range(3))
    t_structured = min(_timed(lambda: unique(structured, marker)) for _ in range(3))
    print(f"scattered {t_scattered * 1e3:.2f} ms, structured {t_structured * 1e3:.2f} ms")
    assert t_structured < 20 * t_scattered + 0.05, (t_structured, t_scattered)


def test_unique_large(rng):
    check(rng.integers(-10**6, 10**6, 200_000).astype(np.int64), np.int64)
    check(rng.integers(0, 50, 100_000).astype(np.int32))


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0

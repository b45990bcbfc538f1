"""Native no-GIL bridge: BladeFusedCall calling hand-written Numba cfuncs."""
import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf
from numba import carray, cfunc

from tf_blade.kernels.errors import set_error
from tf_blade.kernels.strings import TSTRING_BYTES, string_at
from tf_blade.runtime import native
from tf_blade.runtime.abi import ENTRY_SIG, ERRBUF_LEN, call_alloc, ptr_from_int

# ---------------------------------------------------------------- entries

@cfunc(ENTRY_SIG)
def add_one(in_ptrs, in_shapes, ctx, alloc, errbuf):
    n, d = in_shapes[0], in_shapes[1]
    x = carray(ptr_from_int(in_ptrs[0], np.float32), (n, d))
    dims = np.empty(2, np.int64)
    dims[0] = n
    dims[1] = d
    addr = call_alloc(alloc, ctx, 0, 2, dims.ctypes.data)
    if addr == 0:
        return 1
    out = carray(ptr_from_int(addr, np.float32), (n, d))
    for i in range(n):
        for j in range(d):
            out[i, j] = x[i, j] + 1.0
    return 0


@cfunc(ENTRY_SIG)
def str_lengths(in_ptrs, in_shapes, ctx, alloc, errbuf):
    # outputs: byte length of each string, and the byte sum of each string, read from the
    # input's tstrings in place (short strings inline, long ones behind a pointer)
    n = in_shapes[0]
    tstrings = carray(ptr_from_int(in_ptrs[0], np.uint8), (n * TSTRING_BYTES,))
    dims = np.empty(1, np.int64)
    dims[0] = n
    a0 = call_alloc(alloc, ctx, 0, 1, dims.ctypes.data)
    a1 = call_alloc(alloc, ctx, 1, 1, dims.ctypes.data)
    if a0 == 0 or a1 == 0:
        return 1
    lens = carray(ptr_from_int(a0, np.int64), (n,))
    sums = carray(ptr_from_int(a1, np.int64), (n,))
    for i in range(n):
        buf, start, length = string_at(tstrings, tstrings[:0], i)
        lens[i] = length
        s = 0
        for k in range(start, start + length):
            s += buf[k]
        sums[i] = s
    return 0


@cfunc(ENTRY_SIG)
def fails(in_ptrs, in_shapes, ctx, alloc, errbuf):
    set_error(carray(errbuf, (ERRBUF_LEN,)), "x must be positive, got shape [", in_shapes[0], "]")
    return 1


@cfunc(ENTRY_SIG)
def positives(in_ptrs, in_shapes, ctx, alloc, errbuf):
    n = in_shapes[0]
    x = carray(ptr_from_int(in_ptrs[0], np.int32), (n,))
    count = 0
    for i in range(n):
        if x[i] > 0:
            count += 1
    dims = np.empty(1, np.int64)
    dims[0] = count
    addr = call_alloc(alloc, ctx, 0, 1, dims.ctypes.data)
    if addr == 0:
        return 1
    out = carray(ptr_from_int(addr, np.int32), (count,))
    k = 0
    for i in range(n):
        if x[i] > 0:
            out[k] = x[i]
            k += 1
    return 0


@cfunc(ENTRY_SIG)
def bad_rank_alloc(in_ptrs, in_shapes, ctx, alloc, errbuf):
    dims = np.zeros(3, np.int64)
    if call_alloc(alloc, ctx, 0, 3, dims.ctypes.data) == 0:
        set_error(carray(errbuf, (ERRBUF_LEN,)), "alloc failed")
        return 1
    return 0


@cfunc(ENTRY_SIG)
def no_alloc(in_ptrs, in_shapes, ctx, alloc, errbuf):
    return 0


ENTRIES = {"add_one": add_one, "str_lengths": str_lengths, "fails": fails,
           "positives": positives, "bad_rank_alloc": bad_rank_alloc, "no_alloc": no_alloc}
CALLS = []


def _compile(spec, in_dtypes, in_ranks):
    CALLS.append((spec, in_dtypes, in_ranks))
    if spec == b"raise":
        raise ValueError("boom from the compiler")
    return ENTRIES[spec.decode()].address


@pytest.fixture(scope="module")
def bridge(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TF_BLADE_CACHE_DIR", str(tmp_path_factory.mktemp("blade_cache")))
    t0 = time.perf_counter()
    b = native.load()
    print(f"\nnative bridge build+load: {time.perf_counter() - t0:.1f}s ({b.path})")
    b.set_compile_callback(_compile)
    yield b
    from tf_blade.runtime import bridge as blade_bridge
    b.set_compile_callback(blade_bridge._compile_entry)  # later tests compile real kernels
    mp.undo()


def _call(b, args, tout, ranks, spec, key=None):
    return b.module.blade_fused_call(args=args, Tout=tout, out_ranks=ranks,
                                     cluster=spec, cluster_key=key or "key-" + spec)

# ---------------------------------------------------------------- tests

def test_add_one_compiles_once(bridge):
    c0, s0 = bridge.compile_count(), bridge.cache_size()

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        (y,) = _call(bridge, [x], [tf.float32], [2], "add_one")
        return y

    for n in (0, 1, 7, 512):
        x = np.random.rand(n, 3).astype(np.float32)
        y = f(x).numpy()
        assert y.shape == (n, 3)
        np.testing.assert_allclose(y, x + 1)
    assert bridge.compile_count() - c0 == 1
    assert bridge.cache_size() - s0 == 1
    assert CALLS[-1] == (b"add_one", [tf.float32.as_datatype_enum], [2])
    # static shape inference: unknown dims, known rank
    assert f.get_concrete_function().outputs[0].shape.as_list() == [None, None]


def test_strings(bridge):
    for vals in ([b"", "h\u00e9llo".encode(), b"\x00ab", b"", b"xyz" * 100, b"q" * 22, b"r" * 23], []):
        x = tf.constant(vals, dtype=tf.string, shape=[len(vals)])
        lens, sums = _call(bridge, [x], [tf.int64, tf.int64], [1, 1], "str_lengths")
        assert lens.numpy().tolist() == [len(v) for v in vals]
        assert sums.numpy().tolist() == [sum(v) for v in vals]


def test_kernel_error_message(bridge):
    x = tf.zeros([5], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"x must be positive, got shape \[5\]"):
        _call(bridge, [x], [tf.float32], [1], "fails")


def test_compile_callback_raises(bridge):
    c0, s0 = bridge.compile_count(), bridge.cache_size()
    x = tf.zeros([2], tf.float32)
    for _ in range(2):  # failures are not cached: the callback runs again
        n_calls = len(CALLS)
        with pytest.raises(tf.errors.InternalError,
                           match="kernel compile failed: ValueError: boom from the compiler"):
            _call(bridge, [x], [tf.float32], [1], "raise")
        assert len(CALLS) == n_calls + 1
    assert (bridge.compile_count(), bridge.cache_size()) == (c0, s0)


def test_data_dependent_output(bridge):
    @tf.function
    def f(x):
        return _call(bridge, [x], [tf.int32], [1], "positives")[0]

    for vals in ([3, -1, 0, 7, -2, 5], [-1, -2], []):
        x = np.array(vals, np.int32)
        np.testing.assert_array_equal(f(tf.constant(x)).numpy(), x[x > 0])


def test_alloc_misuse(bridge):
    x = tf.zeros([2], tf.float32)
    with pytest.raises(tf.errors.InternalError, match="output 0 has rank 3, expected 1"):
        _call(bridge, [x], [tf.float32], [1], "bad_rank_alloc")
    with pytest.raises(tf.errors.InternalError, match="did not allocate output 0"):
        _call(bridge, [x], [tf.float32], [1], "no_alloc")


def test_dispatch_key_includes_dtype_and_rank(bridge):
    c0 = bridge.compile_count()
    _call(bridge, [tf.zeros([2, 2])], [tf.float32], [2], "add_one", key="k-multi")
    _call(bridge, [tf.zeros([2, 2])], [tf.float32], [2], "add_one", key="k-multi")
    _call(bridge, [tf.zeros([2, 2, 1])], [tf.float32], [2], "add_one", key="k-multi")
    assert bridge.compile_count() - c0 == 2


def test_helpers_are_cacheable(tmp_path):
    # cache=True entry using every helper: second process must load it from cache.
    script = tmp_path / "cached_entry.py"
    script.write_text(textwrap.dedent("""
        import ctypes, sys
        import numpy as np
        from numba import carray, cfunc
        from tf_blade.kernels.errors import set_error
        from tf_blade.runtime.abi import ENTRY_SIG, ERRBUF_LEN, call_alloc, ptr_from_int

        @cfunc(ENTRY_SIG, cache=True)
        def entry(in_ptrs, in_shapes, ctx, alloc, errbuf):
            x = carray(ptr_from_int(in_ptrs[0], np.float64), (in_shapes[0],))
            dims = np.empty(1, np.int64)
            dims[0] = in_shapes[0]
            a = call_alloc(alloc, ctx, 0, 1, dims.ctypes.data)
            set_error(carray(errbuf, (ERRBUF_LEN,)), "sum=", int(x.sum()), " addr=", a)
            return 1

        @ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                          ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))
        def fake_alloc(ctx, index, ndim, dims):
            return 4096 + dims[0]

        x = np.arange(4, dtype=np.float64)
        ptrs = (ctypes.c_int64 * 2)(x.ctypes.data, 0)
        shapes = (ctypes.c_int64 * 8)(4)
        buf = ctypes.create_string_buffer(1024)
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 5)(entry.address)
        rc = fn(ptrs, shapes, None, ctypes.cast(fake_alloc, ctypes.c_void_p), buf)
        print(rc, buf.value.decode(), entry.cache_hits)
    """))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    outs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert outs[0] == ["1", "sum=6", "addr=4100", "0"]
    assert outs[1] == ["1", "sum=6", "addr=4100", "1"]


def test_overhead(bridge):
    """Per-call overhead, native op vs tf.numpy_function (printed, not asserted)."""
    x = tf.constant(np.random.rand(8, 4).astype(np.float32))

    @tf.function
    def native_fn(x):
        return _call(bridge, [x], [tf.float32], [2], "add_one")[0]

    @tf.function
    def numpy_fn(x):
        y = tf.numpy_function(lambda a: a + np.float32(1), [x], tf.float32)
        y.set_shape([None, None])
        return y

    def chain(op, k=50):  # k dependent ops in one graph: per-op cost without call overhead
        @tf.function
        def f(x):
            for _ in range(k):
                x = op(x)
            return x
        return f

    def median_us(f, n=2000):
        for _ in range(50):
            f(x)
        ts = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            f(x)
            ts.append(time.perf_counter_ns() - t0)
        return statistics.median(ts) / 1e3

    np.testing.assert_allclose(native_fn(x).numpy(), numpy_fn(x).numpy())
    nat, npf = median_us(native_fn), median_us(numpy_fn)
    nat_op = median_us(chain(native_fn.python_function), 200) / 50
    npf_op = median_us(chain(numpy_fn.python_function), 200) / 50
    print(f"\nper-call (tf.function, [8,4] f32, median of 2000): "
          f"native {nat:.1f} us, numpy_function {npf:.1f} us; "
          f"per op in a 50-op chain: native {nat_op:.1f} us, numpy_function {npf_op:.1f} us")


_MMAPPED_PROBE = textwrap.dedent("""
    import ctypes, sys
    import tf_blade
    from tf_blade.runtime.malloc_tuning import tune_malloc
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    p = libc.malloc(24 << 20)  # above any threshold glibc adapts to at import (TF frees less)
    size_field = ctypes.c_size_t.from_address(p - 8).value  # glibc chunk header
    print(tune_malloc(), bool(size_field & 2))  # IS_MMAPPED
    libc.free(ctypes.c_void_p(p))
""")


@pytest.mark.skipif(not hasattr(__import__("ctypes").CDLL(None), "gnu_get_libc_version"),
                    reason="malloc tuning applies to glibc only")
@pytest.mark.parametrize("setting,expected", [("1", "True False"), ("0", "False True")])
def test_malloc_tuning_keeps_large_buffers_off_mmap(setting, expected):
    """With the tuning a 24 MB block comes from the heap (reused across calls); glibc's default
    serves it with a fresh mmap that each call page-faults in again."""
    env = dict(os.environ, TF_BLADE_MALLOC_TUNING=setting)
    out = subprocess.run([sys.executable, "-c", _MMAPPED_PROBE], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected

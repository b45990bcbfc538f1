"""kernels/sparse_segment_reduction.py against tf.raw_ops.SparseSegment{Sum,Mean,SqrtN}[WithNumSegments].

Float results must be BIT-identical to TF's: the kernel reproduces TF's CPU summation order
(segments under 10 rows left to right then times 1/n or 1/sqrt(n); longer ones n % 8 rows first
(8 or 9 when that is 0 or 1), then blocks of eight, then divided). Data spans many magnitudes so
that any other order changes low bits (test_data_is_order_sensitive guards that).
"""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.sparse_segment_reduction import NO_NUM_SEGMENTS, sparse_segment_reduce

MODES = {0: "Sum", 1: "Mean", 2: "SqrtN"}
I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)
ID_DTYPES = [(np.int32, np.int32), (np.int32, np.int64), (np.int64, np.int32), (np.int64, np.int64)]


def tf_reduce(data, indices, segment_ids, num_segments, mode):
    # tf.constant keeps every dtype: a bare NumPy array given to raw_ops may be silently cast
    # to the attr's default (int32) and change the op's behaviour.
    args = dict(data=tf.constant(data), indices=tf.constant(indices),
                segment_ids=tf.constant(segment_ids))
    name = "SparseSegment" + MODES[mode]
    if num_segments is not None:
        name += "WithNumSegments"
        args["num_segments"] = tf.constant(num_segments)
    try:
        return getattr(tf.raw_ops, name)(**args).numpy(), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def run_kernel(data, indices, segment_ids, num_segments, mode):
    err = new_error_buffer()
    # The lowering passes np.int64(num_segments), or NO_NUM_SEGMENTS when the op has none.
    ns = np.int64(NO_NUM_SEGMENTS) if num_segments is None else np.int64(num_segments)
    out = sparse_segment_reduce(data, indices, segment_ids, ns, mode, err)
    if err[0]:
        return None, error_text(err)
    return out.reshape((out.shape[0],) + data.shape[1:]), None


def assert_bits_equal(got, want, nan_bits=True):
    """The same bits; without ``nan_bits`` a NaN only needs to be a NaN. In a long run a NaN made in
    the sums (inf - inf) and a NaN from the table can meet in one addition, and x86 then keeps its
    first operand's NaN; LLVM leaves the sign and payload of a NaN result unspecified and may swap
    an addition's operands, so which NaN comes out depends on the instructions it picks (TF's own
    depend on Eigen's)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    nan = np.isnan(want) if not nan_bits else np.zeros(want.shape, bool)
    np.testing.assert_array_equal(np.isnan(got)[nan], True)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}")[~nan], want.view(f"u{want.itemsize}")[~nan])


def check(data, indices, segment_ids, num_segments, mode, nan_bits=True):
    want, tf_err = tf_reduce(data, indices, segment_ids, num_segments, mode)
    got, k_err = run_kernel(data, indices, segment_ids, num_segments, mode)
    if tf_err is not None:
        assert k_err, f"TF raised {tf_err!r} but the kernel accepted the input"
        return None
    assert k_err is None, f"kernel rejected an input TF accepts: {k_err}"
    assert_bits_equal(got, want, nan_bits)
    return want


def random_data(rng, shape, dtype):
    # Magnitudes from 1e-3 to 1e3 and both signs: rounding depends on the summation order.
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, size=shape)
    return x.astype(dtype)


def random_segments(rng, lengths, max_gap=2):
    ids, s = [], int(rng.integers(0, max_gap + 1))
    for n in lengths:
        ids += [s] * int(n)
        s += 1 + int(rng.integers(0, max_gap + 1))
    return np.array(ids, np.int64)


@pytest.mark.parametrize("idx_dtype, seg_dtype", ID_DTYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_every_segment_length_1_to_40(rng, mode, dtype, idx_dtype, seg_dtype):
    rows = 60
    data = random_data(rng, (rows, 5), dtype)
    lengths = rng.permutation(np.arange(1, 41))
    seg = random_segments(rng, lengths).astype(seg_dtype)
    idx = rng.integers(0, rows, len(seg)).astype(idx_dtype)
    check(data, idx, seg, None, mode)
    check(data, idx, seg, seg_dtype(seg[-1] + 1 + rng.integers(0, 3)), mode)  # WithNumSegments


@pytest.mark.parametrize("idx_dtype, seg_dtype", ID_DTYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_random_segments(rng, mode, dtype, idx_dtype, seg_dtype):
    for _ in range(15):
        inner = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        rows = int(rng.integers(1, 30))
        data = random_data(rng, (rows,) + inner, dtype)
        lengths = rng.integers(1, 41, size=int(rng.integers(0, 7)))
        seg = random_segments(rng, lengths).astype(seg_dtype)
        idx = rng.integers(0, rows, len(seg)).astype(idx_dtype)
        ns = None
        if rng.random() < 0.5:
            last = int(seg[-1]) + 1 if len(seg) else 0
            ns = rng.choice([np.int32, np.int64])(last + int(rng.integers(0, 4)))
        check(data, idx, seg, ns, mode)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("width", [8, 12, 16, 17, 33])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_runs_as_vector_lanes(rng, mode, dtype, width, idx_dtype):
    # Runs are added LANES elements at a time (kernels/row_lanes.py: 1..4 rows by pool_lanes,
    # longer ones by pool_run_lanes), the rest of a row apart; specials in the table: NaN,
    # infinities, signed zeros, values near overflow
    rows = 40
    data = random_data(rng, (rows, width), dtype)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dtype).max], dtype)
    data.flat[rng.integers(0, data.size, data.size // 8)] = rng.choice(specials, data.size // 8)
    short = random_segments(rng, rng.integers(1, 7, size=60)).astype(np.int32)
    check(data, rng.integers(0, rows, len(short)).astype(idx_dtype), short, None, mode)
    seg = random_segments(rng, rng.permutation(np.arange(5, 41))).astype(np.int32)
    check(data, rng.integers(0, rows, len(seg)).astype(idx_dtype), seg, None, mode, nan_bits=False)
    # a sum of negative zeros keeps its sign, over runs of every length
    seg = random_segments(rng, np.arange(1, 20)).astype(np.int32)
    check(np.full((3, width), -0.0, dtype), rng.integers(0, 3, len(seg)).astype(idx_dtype), seg, None, mode)


def test_data_is_order_sensitive(rng):
    # Guard on the test data: summing a long segment strictly left to right must differ from TF
    # in some bits for most draws, or the bit-exact tests above could not catch a wrong order.
    differs = 0
    for _ in range(20):
        data = random_data(rng, (64, 4), np.float32)
        idx = rng.integers(0, 64, 37).astype(np.int32)
        want, _ = tf_reduce(data, idx, np.zeros(37, np.int32), None, 0)
        naive = np.zeros(4, np.float32)
        for i in idx:
            naive += data[i]
        differs += not np.array_equal(naive.view(np.uint32), want[0].view(np.uint32))
    assert differs >= 5, differs


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_special_values(rng, mode):
    data = np.array([[1.0, np.nan], [np.inf, -0.0], [-np.inf, 3e38], [3e38, -0.0], [0.0, 1e-30]], np.float32)
    for n in (1, 2, 9, 10, 17):
        idx = rng.integers(0, 5, n).astype(np.int32)
        check(data, idx, np.zeros(n, np.int32), None, mode)
        check(data.astype(np.float64), idx, np.zeros(n, np.int64), None, mode)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_empty_inputs(mode):
    f = np.float32
    e32, e64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    data = np.arange(12, dtype=f).reshape(4, 3)
    check(data, e32, e32, None, mode)
    check(data, e64, e64, np.int32(0), mode)
    check(data, e32, e64, np.int32(3), mode)
    check(data, e32, e32, np.int64(5), mode)
    check(np.zeros((0, 3), f), e32, e32, None, mode)
    check(np.zeros((0, 3), f), e32, e32, np.int32(2), mode)
    check(np.zeros((4, 0), f), np.array([0, 3], np.int32), np.array([0, 2], np.int32), None, mode)
    check(np.zeros((4, 2, 0), f), np.array([1], np.int64), np.array([0], np.int64), np.int64(3), mode)


@pytest.mark.parametrize("idx_dtype, seg_dtype", ID_DTYPES)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("indices, segment_ids, num_segments", [
    ([0, 1, 2], [0, 0], None),            # lengths differ
    ([0, 1], [0, 0, 1], 3),
    ([0, 1, 2], [0, 2, 1], None),         # not increasing
    ([0, 1, 2], [1, 1, 0], 4),
    ([0, 1, 2], [-1, 0, 2], None),        # negative first id
    ([0, 1, 2], [-1, -1, -1], None),      # all negative
    ([0, 1, 2], [-3, -2, -1], 5),
    ([0, 4, 3], [0, 0, 1], None),         # index past the data
    ([0, -1, 3], [0, 0, 1], None),        # negative index
    ([3, 2, 1], [0, 1, 7], None),         # fine (gaps)...
    ([3, 2, 1], [0, 1, 7], 7),            # ...but num_segments too small
    ([3, 2, 1], [0, 1, 2], 0),
    ([0, 1], [0, 1], -2),                 # negative num_segments
    ([], [], -5),
    ([0, 1], [0, 1], I32.min),
])
def test_bad_inputs_set_error(mode, idx_dtype, seg_dtype, indices, segment_ids, num_segments):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    ns = None if num_segments is None else np.int32(num_segments)
    check(data, np.array(indices, idx_dtype), np.array(segment_ids, seg_dtype), ns, mode)


@pytest.mark.parametrize("idx_dtype, seg_dtype", ID_DTYPES)
def test_extreme_ids(idx_dtype, seg_dtype):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    for bad in (np.iinfo(idx_dtype).max, np.iinfo(idx_dtype).min):
        check(data, np.array([0, bad], idx_dtype), np.array([0, 1], seg_dtype), None, 0)
    smin = np.iinfo(seg_dtype).min
    check(data, np.array([0, 1], idx_dtype), np.array([smin, 0], seg_dtype), None, 1)
    check(data, np.array([0, 1], idx_dtype), np.array([0, smin], seg_dtype), None, 1)
    if seg_dtype == np.int32 or idx_dtype == np.int32:
        # TF: "Last segment id must be < kintmax" (int32 indices) or an int32 overflow of
        # last id + 1 (int32 segment ids): errors, before anything is allocated.
        check(data, np.array([0, 1], idx_dtype), np.array([0, I32.max], seg_dtype), None, 2)
    # the largest segment id of the type (int64: "Last segment id must be < kintmax", not an
    # overflowed last id + 1 to allocate)
    top = (data, np.array([0, 1], idx_dtype), np.array([0, np.iinfo(seg_dtype).max], seg_dtype), None, 0)
    check(*top)
    (_, want), (_, got) = tf_reduce(*top), run_kernel(*top)
    assert ("kintmax" in want) == ("kintmax" in got), (want, got)


def test_num_segments_is_read_as_int32_like_tf(rng):
    # TF reads num_segments as int32 whatever its dtype: an int64 2**32 + 3 means 3 segments.
    data = random_data(rng, (4, 3), np.float32)
    for mode in (0, 1, 2):
        want = check(data, np.array([0, 1, 2], np.int32), np.array([0, 1, 1], np.int64),
                     np.int64(2**32 + 3), mode)
        assert want is not None and want.shape == (3, 3)
        check(data, np.array([0, 1, 2], np.int64), np.array([0, 1, 1], np.int32),
              np.int64(2**32 - 2), mode)  # reads as -2: error


@pytest.fixture(scope="module")
def tf_refuses_huge_output():
    # TF cannot allocate the output (ResourceExhausted). Asked once, and with a byte count that
    # overflows: for merely huge sizes TF's allocator retries for ~10 s before giving up.
    want, tf_err = tf_reduce(np.ones((4, 3), np.float32), np.array([0, 1], np.int64),
                             np.array([0, 2**61], np.int64), None, 0)
    assert tf_err is not None and "OOM" in tf_err
    return tf_err


@pytest.mark.parametrize("segment_ids, num_segments", [
    ([0, 2**40], None), ([0, 2**62], None), ([0, I64.max - 1], None), ([0, 1], 2**31 - 1),
])
def test_huge_outputs_set_error(tf_refuses_huge_output, segment_ids, num_segments):
    # Advisories: huge segment ids / num_segments must fail cleanly, not raise or crash.
    data = np.ones((4, 3 * 2**20), np.float32)  # num_segments 2**31 - 1 rows of 12 MiB each
    err = new_error_buffer()
    ns = NO_NUM_SEGMENTS if num_segments is None else num_segments
    sparse_segment_reduce(data, np.array([0, 1], np.int64), np.array(segment_ids, np.int64),
                          np.int64(ns), 0, err)
    assert err[0] != 0 and error_text(err)


def test_large_batch(rng):
    rows, n = 5000, 60000
    data = random_data(rng, (rows, 16), np.float32)
    seg = np.sort(rng.integers(0, 3000, n)).astype(np.int64)
    idx = rng.integers(0, rows, n).astype(np.int64)
    for mode in (0, 1, 2):
        check(data, idx, seg, None, mode)

"""kernels/reduce.py row reductions against tf.raw_ops Sum/Prod/Max/Min/Mean/Any/All over the
last axis: integers bit-exact (wrap-around included), float sums and means bit-exact too (Eigen's
packet order) up to Eigen's leaf size, within 1e-6 of sum(|x|) past it, float products in the
same order, NaN propagation, empty rows; float reductions over other axes in TF's order for its
view of them; and the lowering's choice of order, end to end."""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.codegen.lowerings.reduce import EIGEN_LANES
from tf_blade.kernels import reduce as k

F32_EPS = dict(rtol=1e-6, atol=1e-6)
LANES = {np.dtype(t): n for t, n in EIGEN_LANES.items()}  # what the lowering passes for floats
EIGEN_ORDER = pytest.mark.skipif(not LANES, reason="TF's packet order is known for x86-64 only")


def tf_reduce(op, x):
    fn = getattr(tf.raw_ops, op)
    return fn(input=tf.constant(x), axis=tf.constant([1])).numpy()


def kernel_reduce(op, x):
    if op in ("Max", "Min"):
        if x.dtype.kind == "f":
            bound = x.dtype.type(-np.inf if op == "Max" else np.inf)
        else:
            info = np.iinfo(x.dtype)
            bound = x.dtype.type(info.min if op == "Max" else info.max)
        return getattr(k, f"reduce_{op.lower()}")(x, bound)
    lanes = LANES.get(x.dtype, 0)
    if op == "Mean":
        return k.reduce_mean(x, x.dtype.kind == "f", lanes)
    if op in ("Sum", "Prod"):
        return getattr(k, f"reduce_{op.lower()}")(x, lanes)
    return getattr(k, f"reduce_{op.lower()}")(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("op", ["Sum", "Prod", "Max", "Min", "Mean"])
def test_numeric_reductions(rng, op, dtype):
    for _ in range(15):
        rows, n = (int(v) for v in rng.integers(0, 7, 2))
        if dtype in (np.float32, np.float64):
            x = rng.standard_normal((rows, n)).astype(dtype) * 3
            if x.size and rng.random() < 0.3:
                x.flat[rng.integers(0, x.size)] = rng.choice([np.nan, np.inf, -np.inf])
        else:
            info = np.iinfo(dtype)
            x = rng.integers(-50, 50, (rows, n)).astype(dtype)
            if x.size and rng.random() < 0.5:
                x.flat[rng.integers(0, x.size)] = rng.choice([info.min, info.max])
        want, got = tf_reduce(op, x), kernel_reduce(op, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        if x.dtype.kind == "f" and not LANES:
            np.testing.assert_allclose(got, want, **F32_EPS)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["Any", "All"])
def test_logical_reductions(rng, op):
    for _ in range(20):
        x = rng.random((int(rng.integers(0, 5)), int(rng.integers(0, 5)))) < 0.5
        np.testing.assert_array_equal(kernel_reduce(op, x), tf_reduce(op, x))


@EIGEN_ORDER
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sums_and_products_go_in_tfs_order(rng, dtype):
    """Every path of the packet order: rows shorter than a packet, whole packets, blocks of four
    with and without packets and scalars left over, up to the longest row Eigen keeps whole.
    Products too (fuzz round 4 found them left to right), of factors near 1 so they stay finite."""
    lanes = LANES[np.dtype(dtype)]
    lengths = sorted({*range(0, 4 * lanes + 3), 63, 64, 65, 100, 257, 1000, 4 * lanes * 37 + lanes + 3,
                      lanes * k.EIGEN_LEAF - 1, lanes * k.EIGEN_LEAF})
    for n in lengths:
        rows = int(rng.integers(1, 5))
        x = (rng.standard_normal((rows, n)) * 10.0 ** rng.uniform(-3, 3, (rows, n))).astype(dtype)
        for op in ("Sum", "Mean"):
            np.testing.assert_array_equal(kernel_reduce(op, x), tf_reduce(op, x), err_msg=f"{op} over {n}")
        near_one = (1 + rng.standard_normal((rows, n)) * 0.01).astype(dtype)
        np.testing.assert_array_equal(kernel_reduce("Prod", near_one), tf_reduce("Prod", near_one), err_msg=f"Prod over {n}")


@EIGEN_ORDER
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_library_row_sums_take_their_dtypes_width_as_a_constant(rng, dtype):
    """sum_rows_as_tf (the direct row sum's, pool_one_column's) compiles reduce_sum for a literal
    packet width, whose loops LLVM unrolls (for a runtime width: 2.2 s of compile and slower rows),
    with TF's bits."""
    from numba import from_dtype, njit, types

    @njit
    def row_sums(x):
        return k.sum_rows_as_tf(x)

    for n in (1, 3, 26, 4 * LANES[np.dtype(dtype)] + 5, 416):
        x = (rng.standard_normal((7, n)) * 10.0 ** rng.uniform(-3, 3, (7, n))).astype(dtype)
        np.testing.assert_array_equal(row_sums(x), tf_reduce("Sum", x), err_msg=f"over {n}")
    widths = [sig.args[1] for sig in k.reduce_sum.nopython_signatures if sig.args[0].dtype == from_dtype(np.dtype(dtype))]
    assert types.literal(LANES[np.dtype(dtype)]) in widths, widths


@EIGEN_ORDER
def test_product_overflow_meets_zero_as_in_tf():
    """The order decides inf * 0: 1e30 * 1e30 overflows in one lane before meeting the 0 of another."""
    x = np.ones((1, 16), np.float32)
    x[0, 0] = x[0, 8] = 1e30
    x[0, 1] = 0
    want = tf_reduce("Prod", x)
    assert np.isnan(want[0])
    np.testing.assert_array_equal(kernel_reduce("Prod", x), want)


def test_long_float_sum_stays_within_tolerance(rng):
    # Past Eigen's leaf size TF splits a row into a tree at packet-aligned points of the whole
    # tensor; the kernel adds those rows in sequence. Summation error scales with the terms, not
    # the result (a sum near 0 has cancelled): within 1e-6 of sum(|x|).
    x = rng.standard_normal((4, 8 * k.EIGEN_LEAF + 1000)).astype(np.float32)
    scale = np.abs(x).astype(np.float64).sum(axis=1)
    assert np.all(np.abs(kernel_reduce("Sum", x) - tf_reduce("Sum", x)) <= 1e-6 * scale)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Prod"])
def test_signed_zeros_as_tf_keeps_them(op):
    # TF copies over a size-1 axis (-0.0 stays) and adds from +0.0 otherwise (-0.0 + -0.0 -> 0.0)
    for n in (1, 2, 3):
        x = np.full((2, n), -0.0, np.float32)
        want, got = tf_reduce(op, x), kernel_reduce(op, x)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@EIGEN_ORDER
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_reductions_over_any_axes_go_in_tfs_order(rng, dtype):
    """float_*_as_tf against TF over every axis set the lowering sends (at most 3 alternating runs
    of kept and reduced axes), on shapes whose size-1 and size-0 axes change TF's view of the
    reduction: middle and first axes (Eigen's 4 accumulators from 16 terms on, only inside
    whole packets), rows, everything, copies."""
    import itertools
    from tf_blade.codegen.lowerings.reduce import _runs
    lanes = LANES[np.dtype(dtype)]
    kernels = {"Sum": k.float_sum_as_tf, "Mean": k.float_mean_as_tf, "Prod": k.float_prod_as_tf}
    sizes = [0, 1, 2, 3, 5, 16, 17, 20, 33]
    for rank in (1, 2, 3, 4):
        for n_axes in range(1, rank + 1):
            for axes in itertools.combinations(range(rank), n_axes):
                if _runs(list(axes), rank) > 3:
                    continue
                mask = np.int64(sum(1 << a for a in axes))
                for _ in range(6):
                    shape = tuple(int(v) for v in rng.choice(sizes, rank))
                    if np.prod(shape) > lanes * k.EIGEN_LEAF:  # past the leaf: within tolerance (above)
                        continue
                    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dtype)
                    for op, kernel in kernels.items():
                        if op == "Prod":  # factors near 1 stay finite
                            x = (1 + rng.standard_normal(shape) * 0.01).astype(dtype)
                        want = getattr(tf.raw_ops, op)(input=tf.constant(x), axis=list(axes)).numpy().ravel()
                        got = kernel(x.ravel(), np.array(shape, np.int64), mask, lanes)
                        np.testing.assert_array_equal(got, want, err_msg=f"{op} over {axes} of {shape}")
                        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_extremes_keep_the_later_of_tied_zeros_as_tf(op):
    """TF's reducers return the later term on a tie (std::max(t, accum)): the sign of a zero
    result is the later zero's. Rows shorter than a packet, where TF goes term by term."""
    for row in ([0.0, -0.0], [-0.0, 0.0], [0.0, 0.0, 0.0, -0.0], [-1.0, 0.0, -0.0], [1.0, -0.0, 0.0, 2.0]):
        x = np.array([row], np.float32)
        want, got = tf_reduce(op, x), kernel_reduce(op, x)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=str(row))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_extremes_over_a_middle_axis_match_tf(rng, op, dtype):
    kernel = k.reduce_max_middle if op == "Max" else k.reduce_min_middle
    for shape in ((3, 5, 7), (1, 20, 16), (4, 0, 3), (2, 17, 1), (0, 3, 2)):
        if dtype == np.int64:
            x = rng.integers(-9, 9, shape).astype(dtype)
            bound = np.iinfo(dtype).min if op == "Max" else np.iinfo(dtype).max
        else:
            x = rng.standard_normal(shape).astype(dtype)
            if x.size:
                x.flat[rng.integers(0, x.size, 2)] = np.nan
            bound = -np.inf if op == "Max" else np.inf
        want = getattr(tf.raw_ops, op)(input=tf.constant(x), axis=[1]).numpy()
        np.testing.assert_array_equal(kernel(x, dtype(bound)), want, err_msg=str(shape))


R = tf.raw_ops


@tf.function(input_signature=[tf.TensorSpec([None, 26], tf.float32), tf.TensorSpec([None, 3, 40], tf.float64)])
def _reductions(x, y):
    return {"sum_last": R.Sum(input=x, axis=[1], keep_dims=True),
            "mean_last_two": R.Mean(input=y, axis=[-1, -2]),
            "sum_first": R.Sum(input=x, axis=[0])}


@EIGEN_ORDER
def test_lowering_sums_in_tfs_order(rng):
    """Sums over a tensor's innermost axes (the wide part of wide & deep: a [batch, 26] layer
    summed per row) and over its first axis, which TF runs another way, give TF's bits."""
    import tf_blade
    from conftest import op_counts

    fused = tf_blade.optimize(_reductions, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused).get("BladeFusedCall", 0) >= 1 and "Sum" not in op_counts(fused)
    for batch in (1, 7, 300):
        x = (rng.standard_normal((batch, 26)) * 10).astype(np.float32)
        y = rng.standard_normal((batch, 3, 40))
        want, got = _reductions(x, y), fused(x=tf.constant(x), y=tf.constant(y))
        for key in ("sum_last", "mean_last_two", "sum_first"):
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)

"""The lowerings added for column types (reductions over any constant axes, OneHot on every
axis, Bucketize, Fill, Range, Transpose, SparseToDense, SegmentSum, UnsortedSegmentSum,
DivNoNan, UniqueWithCounts, Squeeze, Size, Rank, ClipByValue, Unpack, FloorMod, GatherV2 with batch_dims, rank-3 Slice and StridedSlice), fused together in one graph and run against the same graph in TF. Integer outputs
bit-exact, float reductions within 1e-6 relative."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

R = tf.raw_ops
NEW_OPS = {"Sum", "Max", "Min", "Mean", "Prod", "Any", "All", "OneHot", "Bucketize", "Fill", "Range",
           "Transpose", "SparseToDense", "SegmentSum", "UnsortedSegmentSum", "DivNoNan", "UniqueWithCounts",
           "Squeeze", "Size", "ClipByValue", "Rank", "Unpack", "FloorMod", "GatherV2", "Slice", "StridedSlice"}


@tf.function(input_signature=[tf.TensorSpec([None, 3, 2], tf.float32), tf.TensorSpec([None], tf.int64),
                              tf.TensorSpec([None, 2], tf.int64)])
def glue(x, ids, coords):
    n = tf.shape(x)[0]
    out = {}
    for axes in ([1], [0, 2], [-1, 0, 1]):
        for op in ("Sum", "Max", "Min", "Mean", "Prod"):
            out[f"{op}{axes}"] = getattr(R, op)(input=x, axis=axes, keep_dims=len(axes) == 2)
    positive = R.Greater(x=x, y=0.0)
    out["any"] = R.Any(input=positive, axis=[1])
    out["all"] = R.All(input=positive, axis=[0, 2], keep_dims=True)
    for axis in (-1, 0, 1):
        out[f"one_hot{axis}"] = R.OneHot(indices=ids, depth=5, on_value=2.0, off_value=-1.0, axis=axis)
    out["bucket"] = R.Bucketize(input=x, boundaries=[-1.0, 0.0, 0.5, 2.0])
    out["fill"] = R.Fill(dims=tf.stack([n, 2]), value=tf.constant(7, tf.int64))
    out["range"] = R.Range(start=0, limit=n, delta=2)
    out["transpose"] = R.Transpose(x=x, perm=[2, 0, 1])
    out["dense"] = R.SparseToDense(sparse_indices=coords, output_shape=tf.constant([4, 3], tf.int64),
                                   sparse_values=coords[:, 0] * 10 + coords[:, 1], default_value=tf.constant(-1, tf.int64))
    segments = R.Cast(x=R.Abs(x=ids), DstT=tf.int32)
    out["segment_sum"] = R.SegmentSum(data=x, segment_ids=tf.sort(segments))
    out["unsorted_segment_sum"] = R.UnsortedSegmentSum(data=x, segment_ids=segments - 1, num_segments=4)
    out["div_no_nan"] = R.DivNoNan(x=x, y=R.Maximum(x=x, y=0.0))
    unique = R.UniqueWithCounts(x=ids, out_idx=tf.int32)
    out["unique_y"], out["unique_idx"], out["unique_count"] = unique.y, unique.idx, unique.count
    out["squeeze"] = R.Squeeze(input=R.ExpandDims(input=R.ExpandDims(input=x, axis=1), axis=-1), axis=[1, -1])
    out["size"] = R.Size(input=x, out_type=tf.int64)
    out["clip"] = R.ClipByValue(t=x, clip_value_min=tf.constant(-0.5), clip_value_max=R.Abs(x=x) * 0.5)
    out["rank"] = R.Rank(input=x)
    for axis, num in ((1, 3), (-1, 2)):
        for i, part in enumerate(R.Unpack(value=x, num=num, axis=axis)):
            out[f"unpack{axis}_{i}"] = part
    for i, dim in enumerate(R.Unpack(value=R.Shape(input=x), num=3)):  # scalars
        out[f"unpack_dim{i}"] = dim
    wide = R.Mul(x=R.Reshape(tensor=ids, shape=[-1, 1]), y=tf.constant([1, 7, 3 << 60, -(5 << 59)], tf.int64))
    out["floor_mod"] = R.FloorMod(x=wide, y=tf.constant([-7, -1, 3, 1 << 62], tf.int64))
    picks = R.FloorMod(x=R.Reshape(tensor=ids, shape=[-1, 1]), y=tf.constant(3, tf.int64))  # [n, 1]
    out["gather_batch1"] = R.GatherV2(params=x, indices=picks, axis=1, batch_dims=1)
    out["gather_batch_neg"] = R.GatherV2(params=x, indices=R.FloorMod(x=picks, y=tf.constant(2, tf.int64)),
                                         axis=-1, batch_dims=-1)
    out["slice3"] = R.Slice(input=x, begin=[0, 1, 0], size=[-1, 2, 1])
    out["strided_slice3"] = R.StridedSlice(input=x, begin=[0, 2, 1], end=[0, -4, 2], strides=[1, -2, 1],
                                           begin_mask=1, end_mask=1, shrink_axis_mask=4)
    return out


@pytest.fixture(scope="module")
def fused():
    opt = tf_blade.optimize(glue, bridge="native", min_cluster_size=1)
    return opt.signatures["serving_default"]


def test_everything_fuses(fused):
    counts = op_counts(fused)
    assert counts["BladeFusedCall"] >= 1 and not NEW_OPS & set(counts), counts


def _inputs(rng, n, bad=False):
    x = (rng.standard_normal((n, 3, 2)) * 2).astype(np.float32)
    x.flat[: min(x.size, 3)] = [np.nan, 0.0, -np.inf][: min(x.size, 3)]
    ids = rng.integers(-2, 5, n)
    coords = np.unique(np.stack([rng.integers(0, 4, 5), rng.integers(0, 3, 5)], 1), axis=0)
    if bad:
        coords[-1] = [9, 9]
    return tf.constant(x), tf.constant(ids), tf.constant(coords)


@pytest.mark.parametrize("n", [0, 1, 6])
def test_matches_tensorflow(fused, rng, n):
    args = _inputs(rng, n)
    try:
        want = glue(*args)
    except tf.errors.InvalidArgumentError:  # e.g. segment ids past the sorted end
        with pytest.raises(tf.errors.InvalidArgumentError):
            fused(*args)
        return
    got = fused(*args)
    for name, w in want.items():
        w, g = w.numpy(), got[name].numpy()
        assert w.dtype == g.dtype and w.shape == g.shape, name
        if w.dtype.kind == "f" and name[:3] in ("Sum", "Mea", "Pro", "seg", "uns"):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_bad_input_raises_tf_error(fused, rng):
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        fused(*_inputs(rng, 4, bad=True))


def test_floor_mod_by_zero_is_refused_as_tf_refuses_it(rng):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)])
    def mod(x, y):
        return {"mod": R.FloorMod(x=R.Abs(x=x), y=y)}
    fused = tf_blade.optimize(mod, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1
    x, y = tf.constant([5, -9, 4], tf.int32), tf.constant([3, 0, -2], tf.int32)
    for fn in (mod, fused):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            fn(x, y)
    empty = tf.constant([], tf.int32)  # no element divides: no error
    np.testing.assert_array_equal(fused(empty, empty)["mod"].numpy(), mod(empty, empty)["mod"].numpy())


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_integer_floor_mod_matches_tf_at_the_limits(dtype):
    """Every pair of the dtype's limits and small values, divisors of -1 (INT_MIN % -1 traps in
    hardware) and INT_MIN included, broadcast over rows."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], dtype), tf.TensorSpec([None], dtype)])
    def mod(x, y):
        return {"mod": R.FloorMod(x=x + 0, y=y + 0)}
    fused = tf_blade.optimize(mod, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1 and "FloorMod" not in op_counts(fused)
    info = np.iinfo(dtype.as_numpy_dtype)
    values = np.array([info.min, info.min + 1, -7, -1, 0, 1, 5, info.max - 1, info.max], dtype.as_numpy_dtype)
    divisors = tf.constant([info.min, -7, -2, -1, 1, 2, 3, info.max], dtype)
    x = tf.constant(np.repeat(values[:, None], 8, 1))
    np.testing.assert_array_equal(fused(x, divisors)["mod"].numpy(), mod(x, divisors)["mod"].numpy())


def test_unpack_of_the_wrong_length_is_refused_as_tf_refuses_it():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.int64)])
    def unpack(x):
        a, b, c = R.Unpack(value=x + 1, num=3)
        return {"sum": a + b + c}
    fused = tf_blade.optimize(unpack, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1 and "Unpack" not in op_counts(fused)
    x = tf.constant([[1, 2], [3, 4], [5, 6]], tf.int64)
    np.testing.assert_array_equal(fused(x)["sum"].numpy(), unpack(x)["sum"].numpy())
    bad = tf.constant([[1, 2], [3, 4]], tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError) as want:
        unpack(bad)
    with pytest.raises(tf.errors.InvalidArgumentError) as got:
        fused(bad)
    message = "Input shape axis 0 must equal 3, got shape [2,2]"
    assert message in got.value.message and message in want.value.message


@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 3], tf.float32)])
def stacks(a, b):
    return {f"axis{axis}": R.Pack(values=[a, b, a * 2.0], axis=axis) * 1.0 for axis in (0, 1, 2, -1, -3)}


def test_pack_on_any_axis_and_its_shape_check(rng):
    fused = tf_blade.optimize(stacks, min_cluster_size=1).signatures["serving_default"]
    assert "Pack" not in op_counts(fused), op_counts(fused)
    for n in (0, 1, 4):
        a, b = (tf.constant(rng.standard_normal((n, 3)).astype(np.float32)) for _ in range(2))
        want, got = stacks(a, b), fused(a, b)
        for k in want:
            np.testing.assert_array_equal(got[k].numpy(), want[k].numpy(), err_msg=k)
    a, b = tf.zeros([2, 3]), tf.zeros([4, 3])
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        stacks(a, b)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        fused(a, b)
    message = "Shapes of all inputs must match: values[0].shape = [2,3] != values[1].shape = [4,3]"
    assert message in theirs.value.message and message in ours.value.message

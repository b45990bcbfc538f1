"""kernels/elementwise.py: broadcast_shape against tf.raw_ops.BroadcastArgs, select_rows against
tf.raw_ops.Select (v1, vector condition), fused Select v1 against TF, string_equals_const against tf.raw_ops.Equal."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

from tf_blade.kernels.elementwise import broadcast_shape, select_broadcast, select_rows, string_equals_const
from tf_blade.kernels.errors import error_text, new_error_buffer
from conftest import error_core


# --------------------------------------------------------------------------------------------
# broadcast_shape
# --------------------------------------------------------------------------------------------

def check_broadcast(a, b):
    try:
        want = tf.raw_ops.BroadcastArgs(s0=tf.constant(a, tf.int64), s1=tf.constant(b, tf.int64)).numpy()
        tf_err = None
    except tf.errors.InvalidArgumentError as e:
        want, tf_err = None, e.message
    err = new_error_buffer()
    # Shapes travel as tuples with the true rank alongside; a rank-0 tensor's shape is (1,).
    got = broadcast_shape(tuple(a) or (1,), tuple(b) or (1,), len(a), len(b), err)
    if tf_err is not None:
        assert err[0] != 0, f"TF raised {tf_err!r} but the kernel accepted {a} and {b}"
        assert error_text(err) == error_core(tf_err)  # "Incompatible shapes: [2,3] vs. [4]"
        return
    assert err[0] == 0, f"kernel rejected {a} and {b}: {error_text(err)}"
    np.testing.assert_array_equal(got, want)


dims = st.lists(st.sampled_from([0, 1, 1, 2, 3, 5]), max_size=4)


@settings(max_examples=50, deadline=None)
@given(a=dims, b=dims)
def test_broadcast_shape_hypothesis(a, b):
    check_broadcast(a, b)


def test_broadcast_shape_random(rng):
    for _ in range(200):
        ra, rb = rng.integers(0, 5, size=2)
        a = [int(rng.choice([0, 1, 2, 3, 7])) for _ in range(ra)]
        b = [int(rng.choice([0, 1, 2, 3, 7])) for _ in range(rb)]
        if rb and rng.random() < 0.5:  # make them compatible more often
            b = [x if rng.random() < 0.5 else 1 for x in a[-rb:]] + b[len(a):] if len(a) >= rb else b
        check_broadcast(a, b)


def test_broadcast_shape_edges():
    for a, b in [([], []), ([0], [1]), ([1], [0]), ([0], [0]), ([0], [2]), ([2, 1], [0]),
                 ([5, 1, 3], [4, 1]), ([5, 2, 3], [4, 3]), ([2**40], [1]), ([1], [2**40])]:
        check_broadcast(a, b)
        check_broadcast(b, a)


# --------------------------------------------------------------------------------------------
# select_rows (Select v1 with a vector condition choosing whole rows)
# --------------------------------------------------------------------------------------------

def tf_select(cond, t, e):
    try:
        return tf.raw_ops.Select(condition=tf.constant(cond), x=tf.constant(t), y=tf.constant(e)).numpy(), None
    except tf.errors.InvalidArgumentError as ex:
        return None, ex.message


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_select_rows_random(rng, dtype):
    for _ in range(50):
        n = int(rng.integers(0, 8))
        inner = tuple(int(d) for d in rng.integers(0, 4, size=int(rng.integers(1, 3))))
        cond = rng.random(n) < 0.5
        t = rng.integers(-9, 9, size=(n,) + inner).astype(dtype)
        e = rng.integers(-9, 9, size=(n,) + inner).astype(dtype)
        want, tf_err = tf_select(cond, t, e)
        assert tf_err is None
        got = select_rows(cond, t, e)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        err = new_error_buffer()
        np.testing.assert_array_equal(select_rows(cond, t, e, err), want)
        assert err[0] == 0


@pytest.mark.parametrize("n_cond, t_shape, e_shape", [
    (2, (3, 2), (3, 2)),   # condition shorter than the batch
    (4, (3, 2), (3, 2)),   # ...longer (an out-of-bounds write without the check)
    (3, (3, 2), (1, 2)),   # then / else shapes differ (broadcastable, but Select v1 refuses)
    (3, (3, 2), (3, 1)),
    (3, (3, 2), (5, 2)),
    (3, (3, 2), (3, 2, 1)),  # different ranks
])
def test_select_rows_mismatched_shapes(n_cond, t_shape, e_shape):
    cond = np.ones(n_cond, np.bool_)
    t, e = np.ones(t_shape, np.float32), np.zeros(e_shape, np.float32)
    want, tf_err = tf_select(cond, t, e)
    assert tf_err is not None
    err = new_error_buffer()
    select_rows(cond, t, e, err)  # must not write out of bounds or raise
    assert err[0] != 0 and error_text(err)
    select_rows(cond, t, e)  # without an error buffer: still no crash


@pytest.mark.parametrize("cond_rank", [0, 1, 2])
def test_fused_select_v1_never_broadcasts(rng, cond_rank):
    """Fused Select (v1) answers or refuses as TF does: a scalar condition takes then or else of one
    shape, a vector one rows, a matrix one elements of three equal shapes (fuzz round 4: it
    broadcast where TF raises)."""
    import tf_blade
    specs = [tf.TensorSpec([None] * cond_rank, tf.bool)] + [tf.TensorSpec([None, None], tf.float32)] * 2
    f = tf.function(lambda c, t, e: tf.raw_ops.Select(condition=c, x=t, y=e) * 2.0, input_signature=specs)
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.functions["serving_default"]["clusters"][0]["op_types"].get("Select") == 1
    fused = opt.signatures["serving_default"]
    dims = lambda: tuple(int(d) for d in rng.integers(0, 4, size=2))  # noqa: E731
    for k in range(40):
        t_shape = dims()
        e_shape = t_shape if k % 3 else dims()
        c_shape = (t_shape if k % 2 else dims())[:cond_rank]
        args = [tf.constant(rng.random(c_shape) < 0.5), tf.constant(rng.normal(size=t_shape).astype(np.float32)),
                tf.constant(rng.normal(size=e_shape).astype(np.float32))]
        try:
            want, want_err = f(*args).numpy(), None
        except tf.errors.InvalidArgumentError as ex:
            want, want_err = None, ex.message
        try:
            got, got_err = fused(*args).numpy(), None
        except tf.errors.InvalidArgumentError as ex:
            got, got_err = None, ex.message
        shapes = (c_shape, t_shape, e_shape)
        assert (want_err is None) == (got_err is None), (shapes, want_err, got_err)
        if want_err is None:
            np.testing.assert_array_equal(got, want)
        else:  # the same words, TF's "operation <node>" aside
            core = error_core(want_err).replace("operation Select of type", "operation of type")
            assert core == error_core(got_err), (shapes, want_err, got_err)


def test_fused_select_v2_broadcasts_as_tf_and_never_breaks_its_contract(rng):
    """SelectV2 answers or refuses ("... must be broadcastable") as TF does. Before fuzz round 4,
    a condition incompatible with else alone failed inside the kernel, which then ran TF's ops
    for good (a fallback); the fallback count must not move."""
    import tf_blade
    from tf_blade.runtime.bridge import native_bridge
    specs = [tf.TensorSpec([None, None], tf.bool), tf.TensorSpec([None], tf.int32), tf.TensorSpec([None, None], tf.int32)]
    f = tf.function(lambda c, t, e: tf.where(c, t, e) * 3, input_signature=specs)
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.functions["serving_default"]["clusters"][0]["op_types"].get("SelectV2") == 1
    fused = opt.signatures["serving_default"]
    fallbacks = native_bridge().fallback_count()
    dim = lambda: int(rng.choice([0, 1, 2, 3]))  # noqa: E731
    for _ in range(40):
        args = [tf.constant(rng.random((dim(), dim())) < 0.5), tf.constant(rng.integers(-9, 9, dim()).astype(np.int32)),
                tf.constant(rng.integers(-9, 9, (dim(), dim())).astype(np.int32))]
        try:
            want, want_err = f(*args).numpy(), None
        except tf.errors.InvalidArgumentError as ex:
            want, want_err = None, error_core(ex.message)
        try:
            got, got_err = fused(*args).numpy(), None
        except tf.errors.InvalidArgumentError as ex:
            got, got_err = None, ex.message
        shapes = [a.shape for a in args]
        assert (want_err is None) == (got_err is None), (shapes, want_err, got_err)
        if want_err is None:
            np.testing.assert_array_equal(got, want)
        else:
            assert want_err == error_core(got_err), (shapes, want_err, got_err)
    assert native_bridge().fallback_count() == fallbacks


def test_select_broadcast_matches_tf(rng):
    """The library's broadcasting select (SelectV2, DivNoNan) against TF's SelectV2, bit for bit:
    each input a scalar (it travels as (1,)) or of the output's rank 1-3, with size-1 and size-0
    dims, -0.0, NaN and inf; and strided inputs. (Every combination of ranks and layouts is a
    compile of its own: the test keeps to ~20.)"""
    values = np.array([-0.0, 0.0, 1.5, -2.0, np.nan, np.inf], np.float32)

    def check(cond, t, e):
        want = tf.raw_ops.SelectV2(condition=cond, t=t, e=e).numpy()
        flat, shape = select_broadcast(*(x.reshape(1) if x.ndim == 0 else x for x in (cond, t, e)))
        got = flat.reshape(tuple(shape[:want.ndim]) if want.ndim else ())
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), (cond.shape, t.shape, e.shape)

    for _ in range(120):
        rank = int(rng.integers(1, 4))
        full = [int(rng.choice([0, 1, 2, 3])) for _ in range(rank)]
        shapes = [[1 if rng.random() < 0.3 else d for d in full] if rng.random() < 0.7 else [] for _ in range(3)]
        check(rng.random(shapes[0]) < 0.5, rng.choice(values, size=shapes[1]), rng.choice(values, size=shapes[2]))
    wide = rng.choice(values, size=(3, 8))
    check(rng.random((3, 4)) < 0.5, wide[:, ::2], wide[::-1, 1::2].T.copy().T)  # stepped and reversed views


def test_fused_div_no_nan_broadcasts_as_tf():
    """DivNoNan of a matrix by a row (and by a scalar): 0 wherever the divisor is 0, NaN and inf
    dividends included, as TF gives them."""
    import tf_blade
    specs = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32)]
    f = tf.function(lambda x, y, s: {"row": tf.math.divide_no_nan(x, y), "scalar": tf.math.divide_no_nan(s, y) + 1.0},
                    input_signature=specs)
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    assert opt.report.fused_ops >= 1
    x = np.array([[1.0, np.nan, np.inf, -0.0], [3.0, -np.inf, 0.0, 2.5]], np.float32)
    y = np.array([0.0, 0.0, -0.0, 4.0], np.float32)
    for s in (0.0, np.nan, 3.0):
        want, got = f(x, y, np.float32(s)), opt.signatures["serving_default"](x, y, np.float32(s))
        for key in want:
            assert got[key].numpy().tobytes() == want[key].numpy().tobytes(), key


@pytest.mark.parametrize("x_shape, y_shape", [((2, 3), (4,)), ((0, 3), (2, 1, 2)), ((5, 1), (0, 2))])
def test_fused_binary_op_of_shapes_that_do_not_broadcast_gets_tfs_message(x_shape, y_shape):
    """"Incompatible shapes: [2,3] vs. [4]", both shapes in full, as TF's BCast words it."""
    import tf_blade
    specs = [tf.TensorSpec([None] * len(x_shape), tf.float32), tf.TensorSpec([None] * len(y_shape), tf.float32)]
    f = tf.function(lambda x, y: {"out": (x * 2.0) + y}, input_signature=specs)
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    assert opt.report.fused_ops >= 1
    args = tf.zeros(x_shape), tf.zeros(y_shape)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        f(*args)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        opt.signatures["serving_default"](*args)
    assert error_core(ours.value.message) == error_core(theirs.value.message)


# --------------------------------------------------------------------------------------------
# string_equals_const
# --------------------------------------------------------------------------------------------

def make_pool(strings):
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    data = np.frombuffer(b"".join(strings), np.uint8).copy() if offsets[-1] else np.zeros(0, np.uint8)
    return offsets, data


@settings(max_examples=50, deadline=None)
@given(strings=st.lists(st.binary(max_size=6), max_size=12), const=st.binary(max_size=6),
       pick=st.booleans())
def test_string_equals_const_hypothesis(strings, const, pick):
    if pick and strings:
        const = strings[len(strings) // 2]
    offsets, data = make_pool(strings)
    ids = np.arange(len(strings), dtype=np.int64)
    cb = np.frombuffer(const, np.uint8).copy() if const else np.zeros(0, np.uint8)
    got = string_equals_const(ids, offsets, data, cb)
    t = tf.constant(np.array(strings, dtype=object), tf.string) if strings else tf.zeros([0], tf.string)
    want = tf.raw_ops.Equal(x=t, y=tf.constant(const, tf.string)).numpy()
    np.testing.assert_array_equal(got, want)


def test_string_equals_const_2d_with_zero_bytes(rng):
    strings = [b"", b"a", b"a\x00", b"\x00a", b"ab", b"\xff\xfe", b"a" * 40, b"a" * 39 + b"b"]
    pick = [strings[i] for i in rng.integers(0, len(strings), 24)]
    offsets, data = make_pool(pick)
    ids = np.arange(24, dtype=np.int64).reshape(4, 6)
    t = tf.constant(np.array(pick, dtype=object).reshape(4, 6), tf.string)
    for const in strings:
        cb = np.frombuffer(const, np.uint8).copy() if const else np.zeros(0, np.uint8)
        got = string_equals_const(ids, offsets, data, cb)
        want = tf.raw_ops.Equal(x=t, y=tf.constant(const, tf.string)).numpy()
        np.testing.assert_array_equal(got, want)

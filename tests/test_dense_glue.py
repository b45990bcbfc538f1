"""The elementwise dense glue inside feature clusters (lowerings/binary.py, lowerings/unary.py),
fused and run against TF's own kernels on the same inputs: bit-exact, NaN, infinities, signed
zeros and integer limits included. One graph per dtype holds every op (one compile each).

Float Maximum/Minimum of a true broadcast (here [batch, 3] against [3]) keep NumPy's answer, not
asserted where it differs: subnormal inputs (TF's threads read them as zeros) and which zero a tie
of 0.0 and -0.0 returns (TF decides by the element's place). Operands of the output's size or of
one element get TF's bits (kernels/minmax.py; tests/test_minmax.py), asserted here for scalars."""
import re

import numpy as np
import pytest
import tensorflow as tf

import tf_blade

from conftest import fused_specs, op_counts
from tf_blade.codegen.generate import generate
from tf_blade.graph.attrs import bits_dtype
from tf_blade.runtime.bridge import native_bridge

BINARY = ["Add", "Sub", "Mul", "RealDiv", "FloorMod", "Maximum", "Minimum", "Equal", "Less", "GreaterEqual"]
UNARY = ["Neg", "Abs", "Square", "Sqrt", "Floor", "Ceil"]


def _values(rng, dtype, n):
    if dtype.is_floating:
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e30, 3.5], dtype.as_numpy_dtype)
        x = (rng.standard_normal(n) * 100).astype(dtype.as_numpy_dtype)
    else:
        info = np.iinfo(dtype.as_numpy_dtype)
        special = np.array([info.min, info.max, 0, -1, 1], dtype.as_numpy_dtype)
        x = rng.integers(-1000, 1000, n).astype(dtype.as_numpy_dtype)
    x[: len(special)] = special
    return x[rng.permutation(n)]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64])
def test_elementwise_ops_match_tf(dtype, rng):
    binary = [op for op in BINARY if dtype.is_floating or op not in ("RealDiv", "FloorMod")]  # int: test_lowerings_fused
    unary = [op for op in UNARY if dtype.is_floating or op not in ("Sqrt", "Floor", "Ceil")]
    numeric_ops = [op for op in binary if op not in ("Equal", "Less", "GreaterEqual")] + unary

    @tf.function(input_signature=[tf.TensorSpec([None, 3], dtype), tf.TensorSpec([3], dtype)])
    def glue(x, y):
        # One concat per result dtype joins every op into one cluster (one compile per dtype).
        numeric = [getattr(tf.raw_ops, op)(x=x, y=y) if op in binary else getattr(tf.raw_ops, op)(x=x)
                   for op in numeric_ops]
        logic = [getattr(tf.raw_ops, op)(x=x, y=y) for op in ("Equal", "Less", "GreaterEqual")]
        logic += [tf.raw_ops.LogicalAnd(x=logic[0], y=logic[1]), tf.raw_ops.LogicalOr(x=logic[1], y=logic[2]),
                  tf.raw_ops.LogicalNot(x=logic[2])]
        return {"numeric": tf.concat(numeric, 1), "logic": tf.concat(logic, 1)}

    opt = tf_blade.optimize(glue, bridge="native", min_cluster_size=1)
    fused = opt.signatures["serving_default"]
    ops = set(op_counts(fused))
    assert "BladeFusedCall" in ops and not ops & set(BINARY + UNARY + ["LogicalAnd", "LogicalOr", "LogicalNot"]), ops
    for batch in (0, 1, 40):
        x = _values(rng, dtype, batch * 3 + 8)[: batch * 3].reshape(batch, 3)
        y = _values(rng, dtype, 11)[:3]
        if batch and dtype.is_floating:  # ties of signed zeros (their sign is not compared below)
            x[0, :2], y[:2] = [0.0, -0.0], [-0.0, 0.0]
            x[0, 2], y[2] = -0.0, 3.5  # FloorMod: TF keeps fmod's -0.0 where NumPy's % gives 0.0
        x, y = tf.constant(x), tf.constant(y)
        want, got = glue(x, y), fused(x, y)
        for name in want:
            w, g = want[name].numpy(), got[name].numpy()
            if name == "numeric" and dtype.is_floating:
                for op in ("Maximum", "Minimum"):  # +0.0 turns -0.0 into 0.0, keeps NaN and the rest
                    k = numeric_ops.index(op)
                    w[:, 3 * k:3 * k + 3] += 0.0
                    g[:, 3 * k:3 * k + 3] += 0.0
            assert w.dtype == g.dtype and w.shape == g.shape, name
            bad = np.argwhere((w.view(np.uint8) != g.view(np.uint8)).reshape(w.shape + (w.itemsize,)).any(-1))
            assert np.array_equal(w.view(np.uint8), g.view(np.uint8)), (name, [(tuple(i), w[tuple(i[:2])], g[tuple(i[:2])], x.numpy()[i[0], i[1] % 3], y.numpy()[i[1] % 3]) for i in bad[:5]])


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64])
def test_binary_ops_of_two_scalars_match_tf(dtype):
    # Two rank-0 operands compute one element without the array path (lowerings/binary.py); the
    # dividing ops keep it (a Python scalar divided by zero raises where arrays give TF's answer).
    binary = [op for op in BINARY if dtype.is_floating or op not in ("RealDiv", "FloorMod")]

    @tf.function(input_signature=[tf.TensorSpec([], dtype), tf.TensorSpec([], dtype)])
    def glue(x, y):
        logic = [getattr(tf.raw_ops, op)(x=x, y=y) for op in ("Equal", "Less", "GreaterEqual")]
        logic += [tf.raw_ops.LogicalAnd(x=logic[0], y=logic[1]), tf.raw_ops.LogicalOr(x=logic[1], y=logic[2])]
        return {"numeric": tf.stack([getattr(tf.raw_ops, op)(x=x, y=y) for op in binary
                                     if op not in ("Equal", "Less", "GreaterEqual")]),
                "logic": tf.stack(logic)}

    opt = tf_blade.optimize(glue, bridge="native", min_cluster_size=1)
    fused = opt.signatures["serving_default"]
    assert not set(op_counts(fused)) & set(BINARY + ["LogicalAnd", "LogicalOr"]), op_counts(fused)
    if dtype.is_floating:
        special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e30, 3.5, 2.0 ** 24 + 1]
    else:
        info = np.iinfo(dtype.as_numpy_dtype)
        special = [info.min, info.max, 0, -1, 1, 7, -3]
    for a in special:
        for b in special:
            x, y = tf.constant(a, dtype), tf.constant(b, dtype)
            want, got = glue(x, y), fused(x, y)
            for name in want:
                w, g = want[name].numpy(), got[name].numpy()
                assert w.dtype == g.dtype and np.array_equal(w.view(np.uint8), g.view(np.uint8)), (a, b, name, w, g)


def test_a_cast_to_the_same_dtype_is_its_input():
    # tf.cast returns x itself, but traced ragged code holds Cast(int64 -> int64) ops: the fused
    # code passes the value on (no copy), and the outputs are TF's, an output aliased to an input
    # included.
    f = tf.function(lambda x, b: {"same": tf.raw_ops.Cast(x=x, DstT=tf.int64) * 3,
                                  "out": tf.raw_ops.Cast(x=x + 1, DstT=tf.int64),
                                  "bool": tf.raw_ops.Cast(x=tf.logical_not(b), DstT=tf.bool)},
                    input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.bool)])
    specs = fused_specs(f, min_cluster_size=1)
    assert len(specs) == 1 and sum(n["op"] == "Cast" for n in specs[0]["nodes"]) == 3
    source, templates = generate(specs[0])
    generated = source + "".join(templates.values())
    assert generated.count("# Cast\n") >= 3 and not re.search(r"# Cast\n\s*t\d+ = ", generated)  # no code of its own
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    for x, b in (([], []), ([5, -2**63, 2**63 - 1], [True, False, True])):
        x, b = tf.constant(x, tf.int64), tf.constant(b, tf.bool)
        want, got = f(x, b), opt.signatures["serving_default"](x=x, b=b)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_constants_keep_their_bits(dtype):
    # Generated code once wrote constants through repr(): inf and nan became undefined names (the
    # kernel failed to compile, the cluster stayed in TF) and a NaN's sign and payload were lost.
    bits = bits_dtype(dtype)
    special = np.array([np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).tiny / 4, np.finfo(dtype).max], dtype)
    nans = np.array([np.nan, -np.nan], dtype).view(bits) | np.array([0, 1], bits)  # -NaN, a payload
    special = np.concatenate([special, nans.view(dtype)])
    inf = float("inf")
    f = tf.function(lambda x: {"joined": tf.concat([x, tf.constant(special)], 0),
                               "bucket": tf.raw_ops.Bucketize(input=x, boundaries=[-inf, 0.0, inf]) + 1},
                    input_signature=[tf.TensorSpec([None], dtype)])
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    x = tf.constant(np.array([-inf, -1.0, 0.0, 2.0, inf, np.nan], dtype))
    want, got = f(x), opt.signatures["serving_default"](x)
    np.testing.assert_array_equal(got["joined"].numpy().view(bits), want["joined"].numpy().view(bits))
    np.testing.assert_array_equal(got["bucket"], want["bucket"])


def test_scalar_outputs_allocate_without_spurious_errors(rng):
    # The entry's dims buffer was np.empty: a rank-0 output writes no dim, and the check after its
    # allocation read dims[0] uninitialised, so most cold runs failed with an empty message.
    f = tf.function(lambda x: {"s0": tf.reduce_sum(x, 0), "m0": tf.reduce_mean(x, 0), "s1": tf.reduce_sum(x, 1),
                               "total": tf.reduce_sum(x) * 2.0}, input_signature=[tf.TensorSpec([None, None], tf.float32)])
    (spec,) = fused_specs(f, bridge="native")
    entry = generate(spec)[0].split("def entry(")[1]
    assert entry.index("dims = np.zeros(") < entry.index("call_alloc("), entry  # garbage is not reliably negative
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    for shape in [(2, 2), (1000, 4), (4, 1000), (33, 33), (0, 3)] * 4:
        x = tf.constant(rng.integers(-8, 8, shape).astype(np.float32))  # small integers: sums exact in any order
        want, got = f(x), opt.signatures["serving_default"](x)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])


@pytest.mark.parametrize("dtype", [tf.uint8, tf.uint16, tf.uint32, tf.uint64, tf.int8, tf.int16])
@pytest.mark.parametrize("source", [tf.float32, tf.float64])
def test_float_to_path_dependent_casts_stay_in_tf(dtype, source):
    """Out of range they are undefined in C++ and TF answers by code path (fuzz rounds 3 and 4;
    int8 and int16 saturate in TF's vector loop and wrap in its scalar tail): the cast stays TF's,
    the ops around it fuse, and the answer is TF's at every length."""
    f = tf.function(lambda x: tf.cast(x * 2.0, dtype) + 1, input_signature=[tf.TensorSpec([None], source)])
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    report = opt.report.functions["serving_default"]
    assert any("float to unsigned, int8 or int16" in reason for reason in report["not_fused"]), report["not_fused"]
    for n in (1, 3, 17, 40):
        x = tf.constant(([150.35, -500.1, 20000.0, -129.7, 1e30, np.nan, 3.5, -1.0] * 5)[:n], source)
        np.testing.assert_array_equal(opt.signatures["serving_default"](x).numpy(), f(x).numpy())


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_float_to_wide_signed_casts_fuse_and_match_tf_at_every_length(dtype):
    f = tf.function(lambda x: tf.cast(x * 2.0, dtype) + 1, input_signature=[tf.TensorSpec([None], tf.float64)])
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    assert opt.report.fused_ops == 1, opt.report
    fallbacks = native_bridge().fallback_count()  # a first call that differed would fall back
    for n in (1, 3, 17, 40, 1000):
        x = tf.constant(([1.5e9, -5e9, 1e30, -1e30, np.nan, np.inf, 3.5, -1.0] * 125)[:n], tf.float64)
        np.testing.assert_array_equal(opt.signatures["serving_default"](x).numpy(), f(x).numpy())
    assert native_bridge().fallback_count() == fallbacks


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_pow_by_two_is_what_tfs_runtime_computes(dtype, rng):
    # lowerings/pow.py: Grappler makes Pow(x, 2) a Square in TF's runtime; other exponents stay TF's.
    @tf.function(input_signature=[tf.TensorSpec([None, 3], dtype)])
    def glue(x):
        return {"squared": tf.pow(x, tf.constant([2], dtype)) + 1, "cubed": tf.pow(x, 3) + 1}

    fused = tf_blade.optimize(glue, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused).get("Pow") == 1, op_counts(fused)  # the cube's
    x = (rng.standard_normal((20000, 3)) * 10.0 ** rng.integers(-3, 4, (20000, 3))).astype(dtype.as_numpy_dtype)
    x[0] = [np.nan, -np.inf, -0.0]
    x = tf.constant(x)
    assert not np.array_equal(tf.pow(x, 2).numpy(), x.numpy() * x.numpy())  # Pow's own kernel rounds otherwise
    want, got = glue(x), fused(x)
    for name in want:
        assert np.array_equal(want[name].numpy().view(np.uint8), got[name].numpy().view(np.uint8)), name

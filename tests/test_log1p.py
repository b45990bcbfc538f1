"""Log1p: kernels/log1p.py against TF bit for bit (its AVX packets and libm's tail, NaN payloads,
flushed subnormals), and where the lowering fuses it (codegen/lowerings/log1p.py)."""
import os

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

import tf_blade
from tf_blade.codegen.lowerings.log1p import tf_matches_kernel
from tf_blade.kernels.log1p import PACKET, log1p_float32

EDGES = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-39, -1.1e-38,
                  1.2e-38, 3.4e38, -0.99999994, 1e-8, -1e-8, 5.96e-8, 0.5, 1.0, 2.0, 1000.0], np.float32)
NAN_BITS = np.array([0x7FC00000, 0x7F800001, 0x7FA2885F, 0xFF966F29, 0xFFFFFFFF, 0xFFC00000], np.uint32)


def assert_tf_bits(x):
    want = tf.math.log1p(tf.constant(x)).numpy().view(np.uint32)
    got = log1p_float32(np.ascontiguousarray(x)).view(np.uint32)
    bad = np.nonzero(want != got)[0]
    assert len(bad) == 0, [(hex(int(b)), hex(int(w)), hex(int(g))) for b, w, g
                           in zip(x.view(np.uint32)[bad[:5]], want[bad[:5]], got[bad[:5]])]


def test_tf_on_this_machine_is_the_kernel_the_lowering_reproduces():
    # CI's machine and this one: x86 TF. Elsewhere the lowering leaves Log1p to TF (this says why).
    assert tf_matches_kernel()


def test_random_bit_patterns_every_length_of_tail(rng):
    # random bits: every exponent, NaNs, infinities, subnormals; lengths put each element on
    # either path (packets for the first n - n % 8, libm after)
    for n in list(range(0, 2 * PACKET + 2)) + [1000, 4099]:
        assert_tf_bits(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32))
    assert_tf_bits(rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32))


def test_where_packets_and_libm_disagree(rng):
    # ~30% of these differ between the two paths by an ulp or more: each length moves the tail
    x = rng.uniform(-0.99, 1000.0, 4096).astype(np.float32)
    assert np.mean(log1p_float32(x) != np.log1p(x)) > 0.1  # else this test would not tell the paths apart
    for n in (7, 8, 9, 15, 4095):
        assert_tf_bits(x[:n])
        assert_tf_bits(_path_dependent(rng, n))


def test_edges_on_both_paths():
    # -1 -> -inf, < -1 -> NaN (Eigen's all-ones), NaNs quieted as they are, subnormals flushed to
    # signed zero in packets (TF's threads flush them) but kept by libm, huge and tiny values
    for x in (EDGES, EDGES[:PACKET], EDGES[:PACKET + 5], NAN_BITS.view(np.float32), NAN_BITS[:5].view(np.float32)):
        assert_tf_bits(x)
        assert_tf_bits(np.tile(x, 3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True), max_size=40))
def test_hypothesis(values):
    assert_tf_bits(np.array(values, np.float32))


def _normalized(shape=(None, 1)):
    @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32), tf.TensorSpec([None, None], tf.float32)])
    def serve(x, y):  # wide & deep's normalizer, and a Log1p of another shape read by a Sum
        return {"a": tf.math.log1p(tf.maximum(x, 0.0)) * 3.0,
                "b": tf.reduce_sum(tf.math.log1p(y), axis=1)}
    return serve


def test_fused_log1p_gives_tfs_bits_on_tfs_threads(rng):
    # inside TF's op the kernel runs on TF's threads, which flush subnormals: both paths still
    # give TF's bits, on every batch size's packets and tail, -0.0 and subnormals through the
    # Maximum in front included (kernels/minmax.py)
    serve = _normalized()
    edges = EDGES
    opt = tf_blade.optimize(serve, bridge="native")
    (function,) = opt.report.functions.values()
    assert len(function["clusters"]) == 1 and function["tf_ops_after"] == 0, str(opt.report)
    call = opt.signatures["serving_default"]
    for rows in (0, 1, 7, 8, 13, 64, 1001):
        x = rng.uniform(-5.0, 1e4, (rows, 1)).astype(np.float32)
        x[::5] = edges[rng.integers(0, len(edges), len(x[::5]))][:, None]
        y = rng.integers(0, 1 << 32, (rows, 3), dtype=np.uint64).astype(np.uint32).view(np.float32)
        want, got = serve(x, y), call(x=tf.constant(x), y=tf.constant(y))
        for k in want:
            assert got[k].numpy().tobytes() == want[k].numpy().tobytes(), (k, rows)


def _path_dependent(rng, n):
    """``n`` positive values whose log1p differs between TF's packets and libm."""
    x = rng.uniform(0.0, 1000.0, 64 * n).astype(np.float32)
    return x[log1p_float32(x) != np.log1p(x)][:n]


def _not_fused(fn):
    opt = tf_blade.optimize(fn, bridge="native")
    (function,) = opt.report.functions.values()
    return {k.split(":")[0]: v for k, v in function["not_fused"].items()}, opt


def test_log1p_next_to_a_concat_or_split_stays_tfs(rng):
    # Grappler hoists Log1p across a Concat or Split, so TF runs it on another tensor (another
    # tail): such a Log1p is TF's, and the results are TF's
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)] * 2)
    def concat(a, b):
        return tf.concat([tf.math.log1p(tf.abs(a)), tf.math.log1p(b)], 0) + 1.0

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def split(a):
        p, q = tf.split(a + 1.0, 2)
        return tf.math.log1p(p), tf.math.log1p(tf.abs(q))

    x = _path_dependent(rng, 10)
    for fn, args in ((concat, (x[:5], x[5:])), (split, (x,))):
        reasons, opt = _not_fused(fn)
        assert reasons.get("Log1p") == 2, reasons
        want = tf.nest.flatten(fn(*args))
        got = tf.nest.flatten(opt.signatures["serving_default"](*[tf.constant(a) for a in args]))
        for w, g in zip(want, got):
            assert w.numpy().tobytes() == g.numpy().tobytes()


def test_float64_log1p_stays_tfs():
    fn = tf.function(lambda x: tf.math.log1p(x) * 2.0, input_signature=[tf.TensorSpec([None], tf.float64)])
    reasons, _ = _not_fused(fn)
    assert reasons.get("Log1p") == 1, reasons


@pytest.mark.skipif(os.environ.get("TF_BLADE_LOG1P_EXHAUSTIVE") != "1",
                    reason="every float32 (about 2 minutes): TF_BLADE_LOG1P_EXHAUSTIVE=1 runs it by hand")
def test_every_float32_pattern():
    # the packet path on all 2^32 patterns, in chunks of 2^24 (multiples of 8: no tail)
    chunk = 1 << 24
    for c in range(1 << 8):
        assert_tf_bits(np.arange(c * chunk, (c + 1) * chunk, dtype=np.uint64).astype(np.uint32).view(np.float32))

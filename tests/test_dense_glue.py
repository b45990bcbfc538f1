"""The elementwise dense glue inside feature clusters (lowerings/binary.py, lowerings/unary.py),
fused and run against TF's own kernels on the same inputs: bit-exact, NaN, infinities, signed
zeros and integer limits included. One graph per dtype holds every op (one compile each).

Known divergences of float Maximum/Minimum, not asserted: subnormal inputs (TF's threads run with
denormals-are-zero and its min/max instructions return the flushed 0.0, NumPy returns the
subnormal) and the sign of zero when 0.0 meets -0.0, which TF itself decides by element position
(Eigen's vector path returns the second operand, its scalar tail the first)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade

from conftest import op_counts

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

"""Float Maximum/Minimum: kernels/minmax.py against TF bit for bit (ties of 0.0 and -0.0 decided by
the element's place, subnormals read as zeros, NaN payloads), and fused (codegen/lowerings/binary.py)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from tf_blade.codegen.lowerings.binary import min_max_lanes
from tf_blade.kernels.minmax import min_max_as_tf

DTYPES = [np.float32, np.float64]


def _specials(dtype):
    info = np.finfo(dtype)
    bits = {np.float32: [0x7FC00001, 0x7FA00002, 0xFFC00003], np.float64: [0x7FF8000000000001, 0x7FF4000000000002,
                                                                         0xFFF8000000000003]}[dtype]
    nans = np.array(bits, np.uint32 if dtype == np.float32 else np.uint64).view(dtype)  # quiet, signaling, negative
    return np.concatenate([np.array([0.0, -0.0, info.tiny, -info.tiny, info.tiny / 2, -info.tiny / 4,
                                     info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, 2.5,
                                     np.inf, -np.inf, np.nan], dtype), nans])


def _tf_and_kernel(x, y, take_max):
    op = tf.maximum if take_max else tf.minimum
    want = op(tf.constant(x), tf.constant(y.reshape(()) if y.size == 1 and x.size != 1 else y)).numpy()
    got = np.ascontiguousarray(np.maximum(x, y) if take_max else np.minimum(x, y))
    min_max_as_tf(got, x, y, np.array([np.finfo(x.dtype).tiny], x.dtype), np.int64(min_max_lanes(x.dtype.name)),
                  take_max)
    return want, got


def test_tf_on_this_machine_is_the_kernel_the_lowering_reproduces():
    # CI's machine and this one: x86 TF, AVX packets. Elsewhere the lowering keeps NumPy's answer.
    assert min_max_lanes("float32") == 8 and min_max_lanes("float64") == 4


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("take_max", [True, False])
def test_every_place_and_special_value(rng, dtype, take_max):
    # each length puts elements in packets and in the tail; an operand of one element is TF's
    # scalar path, on either side
    values = _specials(dtype)
    for n in list(range(1, 19)) + [100, 1001]:
        for _ in range(4):
            x, y = values[rng.integers(0, values.size, n)], values[rng.integers(0, values.size, n)]
            for a, b in ((x, y), (x, y[:1]), (x[:1], y)):
                want, got = _tf_and_kernel(a, b, take_max)
                assert got.tobytes() == want.tobytes(), (n, a, b, got, want)


def test_the_numpy_answer_differs_where_tf_decides_by_place():
    # else the tests above could pass without the kernel
    x, y = np.full(9, -0.0, np.float32), np.zeros(9, np.float32)
    want, _ = _tf_and_kernel(x, y, True)
    assert np.signbit(want).tolist() == [False] * 8 + [True]
    assert len(set(np.signbit(np.maximum(x, y)).tolist())) == 1


def test_fused_min_max_give_tfs_bits_on_tfs_threads(rng):
    specs = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 3], tf.float32),
             tf.TensorSpec([None, 2], tf.float64)]

    @tf.function(input_signature=specs)
    def serve(x, y, z):
        return {"max": tf.maximum(x, y) * 2.0, "min": tf.minimum(x, y) + 1.0, "relu": tf.maximum(x, 0.0),
                "clip": tf.minimum(tf.maximum(z, -0.0), 1e-310), "lo": tf.minimum(-0.0, x[:, :1])}

    opt = tf_blade.optimize(serve, bridge="native")
    (function,) = opt.report.functions.values()
    assert len(function["clusters"]) == 1 and function["tf_ops_after"] == 0, str(opt.report)
    call = opt.signatures["serving_default"]
    f32, f64 = _specials(np.float32), _specials(np.float64)
    for rows in (0, 1, 2, 3, 5, 8, 333):
        x, y = f32[rng.integers(0, f32.size, (rows, 3))], f32[rng.integers(0, f32.size, (rows, 3))]
        z = f64[rng.integers(0, f64.size, (rows, 2))]
        want, got = serve(x, y, z), call(x=tf.constant(x), y=tf.constant(y), z=tf.constant(z))
        for k in want:
            assert got[k].numpy().tobytes() == want[k].numpy().tobytes(), (k, rows)

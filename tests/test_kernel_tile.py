"""kernels/tile.py (ranks 1 and 2) against tf.raw_ops.Tile, random inputs, errors included."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, error_core
from tf_blade.kernels.errors import OOM_PREFIX, error_text, new_error_buffer
from tf_blade.kernels.tile import tile_1d, tile_2d

I64 = np.iinfo(np.int64)


def tf_tile(x, multiples):
    try:
        return tf.raw_ops.Tile(input=tf.constant(x), multiples=tf.constant(multiples)).numpy(), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, f"{type(e).__name__}: {error_core(e.message)}"


def run_kernel(x, multiples):
    err = new_error_buffer()
    out = (tile_1d if x.ndim == 1 else tile_2d)(x, multiples, err)
    if not err[0]:
        return out, None
    text = error_text(err)  # the bridge raises an OOM message as ResourceExhaustedError
    return None, ("ResourceExhaustedError: " if text.startswith(OOM_PREFIX) else "InvalidArgumentError: ") + text


def check(x, multiples):
    want, tf_err = tf_tile(x, multiples)
    got, k_err = run_kernel(x, multiples)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)  # TF's OOM message goes on


@pytest.mark.parametrize("mult_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.uint8])
def test_tile_random(rng, dtype, mult_dtype):
    for _ in range(60):
        rank = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(0, 6, size=rank))
        x = (rng.integers(-50, 50, size=shape)).astype(dtype)
        multiples = rng.integers(0, 5, size=rank)
        if rng.random() < 0.1:
            multiples[rng.integers(0, rank)] = -1
        check(x, multiples.astype(mult_dtype))


def test_tile_wrong_multiples_length():
    check(np.arange(5, dtype=np.float32), np.array([1, 2], np.int64))
    check(np.arange(6, dtype=np.float32).reshape(2, 3), np.array([2], np.int32))
    check(np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2, 3], np.int32))


@pytest.mark.parametrize("multiples", [[-1], [I64.min], [-2**31]])
def test_tile_negative_multiples(multiples):
    check(np.arange(3, dtype=np.int32), np.array(multiples, np.int64))
    check(np.arange(6, dtype=np.int32).reshape(2, 3), np.array(multiples * 2, np.int64))


def test_tile_zero_sized():
    check(np.zeros(0, np.float32), np.array([2**62], np.int64))   # 0 * 2**62 = 0: fine for TF
    check(np.zeros((0, 3), np.float32), np.array([I64.max, 2], np.int64))
    check(np.zeros((2, 3), np.float32), np.array([0, 2**62], np.int64))


@pytest.mark.parametrize("x_shape, multiples", [
    ((5,), [2**62]),           # TF: OOM for a wrapped-around 2**62-element output
    ((3, 4), [2**62, 2**62]),  # TF: "Expected a non-negative size"
    ((5,), [2**60]),           # byte count overflows
    ((3, 3), [2**31, 2**31]),
    ((2, 2), [2**40, 3 * 2**40]),  # TF: "Encountered overflow when multiplying 2199023255552 with ..."
    ((1, 3), [2**32, 2**31]),
    ((2,), [2**63 - 1]),           # TF: "Expected a non-negative size, got -2"
    ((3, 3), [2**62, -1]),         # the size check of dimension 0 comes first
    ((1, 2), [-1, -5]),            # the first negative multiple is named, with its own value
    ((1, 2), [-7, -5]),
    ((1, 2), [3, -5]),
])
def test_tile_huge_outputs_set_error(x_shape, multiples):
    check(np.ones(x_shape, np.float32), np.array(multiples, np.int64))


@pytest.mark.parametrize("x_shape, multiples", [
    ((4,), [2**62]), ((2, 4), [3, 2**62]), ((4, 2), [2**62, 3]),  # wraps to 0: an empty result
    ((5,), [2**62]),                                              # wraps to 2**62: OOM
])
def test_tile_wrapping_sizes_as_tf(x_shape, multiples):
    # TF's int64 shape arithmetic wraps
    check(np.ones(x_shape, np.float32), np.array(multiples, np.int64))


@pytest.mark.parametrize("x_shape, multiples", [((4,), [2**62 + 1]), ((3, 8), [2, 2**61 + 1])])
def test_tile_wrapping_to_a_size_it_can_fill_is_refused(x_shape, multiples):
    # wraps to 4 and to 8 columns: TF fills those as Eigen's blocked broadcast happens to (its
    # (3, 8) answer is row 0 six times), not as a tiling: a documented divergence
    got, k_err = run_kernel(np.ones(x_shape, np.float32), np.array(multiples, np.int64))
    assert k_err == "InvalidArgumentError: Tile: the output shape overflows int64"


def test_fused_string_tile_keeps_its_pool():
    # A tiled string tensor's ids point into the input's string pool; the generated code named a
    # pool the tile never had and failed to compile, leaving the cluster in TF
    import tf_blade
    f = tf.function(lambda x, k: tf.strings.to_hash_bucket_fast(tf.tile(x, tf.stack([k, 2])), 7),
                    input_signature=[tf.TensorSpec([None, None], tf.string), tf.TensorSpec([], tf.int32)])
    opt = tf_blade.optimize(f, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    for rows, k in (([["a", "b"], ["c", ""]], 2), ([["\u00e9t\u00e9", "x" * 40]], 3), ([["a"]], 0)):
        x = tf.constant(rows)
        np.testing.assert_array_equal(opt.signatures["serving_default"](x, tf.constant(k)), f(x, k))

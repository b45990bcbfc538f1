"""kernels/gather.py against tf.raw_ops.GatherV2 (any batch_dims) / ResourceGather, random inputs.

The kernel returns (out as [batch, outer, n_ids / batch, inner], output shape vector); reshaped by that vector it
must equal TF's output bit for bit, and wherever TF raises InvalidArgumentError the kernel must
set its error buffer instead of crashing.
"""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.gather import gather

I64 = np.iinfo(np.int64)


def tf_gather(params, ids, axis, batch_dims=0):
    try:
        return tf.raw_ops.GatherV2(params=tf.constant(params), indices=tf.constant(ids),
                                   axis=tf.constant(axis, tf.int64), batch_dims=batch_dims).numpy(), None
    except tf.errors.InvalidArgumentError as e:
        return None, e.message


def tf_resource_gather(params, ids):
    var = tf.Variable(params)
    try:
        return tf.raw_ops.ResourceGather(resource=var.handle, indices=tf.constant(ids),
                                         dtype=var.dtype).numpy(), None
    except tf.errors.InvalidArgumentError as e:
        return None, e.message


def run_kernel(params, ids, axis, strict=False, batch_dims=0):
    err = new_error_buffer()
    out, shape = gather(params, ids, axis, batch_dims, int(strict), err)
    if err[0]:
        return None, error_text(err)
    batch = int(np.prod(params.shape[:batch_dims]))
    assert out.shape == (batch, int(np.prod(params.shape[batch_dims:axis])), ids.size // batch if batch else 0,
                         int(np.prod(params.shape[axis + 1:])))
    return out.reshape(tuple(shape)), None


def assert_identical(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype.kind == "f":  # bit patterns: NaN payloads and -0.0 included
        got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    np.testing.assert_array_equal(got, want)


def check(params, ids, axis, resource=False, batch_dims=0):
    want, tf_err = tf_resource_gather(params, ids) if resource else tf_gather(params, ids, axis, batch_dims)
    got, k_err = run_kernel(params, ids, axis, strict=resource, batch_dims=batch_dims)
    if tf_err is not None:
        assert k_err, f"TF raised {tf_err!r} but the kernel accepted the input"
        assert k_err in tf_err, (k_err, tf_err)  # TF's own words
        return
    assert k_err is None, f"kernel rejected an input TF accepts: {k_err}"
    assert_identical(got, want)


def random_params(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.floating):
        x = rng.standard_normal(shape).astype(dtype)
        if x.size:
            x.flat[rng.integers(0, x.size)] = np.nan
        return x
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


def random_ids(rng, n, shape, dtype, bad_rate):
    ids = rng.integers(0, max(n, 1), size=shape).astype(dtype)
    if ids.size and rng.random() < bad_rate:
        info = np.iinfo(dtype)
        bad = rng.choice([-1, n, n + 7, info.min, info.max, -n - 1])
        ids.flat[rng.integers(0, ids.size)] = bad
    return ids


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_gather_random(rng, dtype, id_dtype):
    for _ in range(40):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(0, 5, size=rank))
        if rng.random() < 0.7:  # mostly non-empty
            shape = tuple(max(d, 1) for d in shape)
        axis = int(rng.integers(0, rank))
        ids_shape = tuple(int(d) for d in rng.integers(0, 4, size=int(rng.integers(1, 3))))
        params = random_params(rng, shape, dtype)
        ids = random_ids(rng, shape[axis], ids_shape, id_dtype, bad_rate=0.3)
        check(params, ids, axis)


def test_gather_scalar_ids_as_0d_array(rng):
    # A true 0-d id array gives the output rank TF gives (params rank - 1).
    params = random_params(rng, (4, 3), np.float32)
    for k in range(4):
        check(params, np.array(k, np.int64), 0)
        check(params, np.array(k % 3, np.int32), 1)


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
def test_resource_gather_random(rng, id_dtype):
    for _ in range(25):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        params = random_params(rng, shape, np.float32)
        ids = random_ids(rng, shape[0], tuple(rng.integers(0, 4, size=int(rng.integers(1, 3)))),
                         id_dtype, bad_rate=0.3)
        check(params, ids, 0, resource=True)


def test_gather_empty_and_degenerate_shapes():
    f = np.float32
    check(np.zeros((0, 3), f), np.zeros(0, np.int64), 0)       # nothing to gather
    check(np.zeros((0, 3), f), np.array([0], np.int64), 0)     # any id into an empty axis fails
    check(np.zeros((0, 3), f), np.array([5, -1], np.int64), 1)  # outer 0: TF checks nothing
    check(np.zeros((3, 0), f), np.array([5, -1], np.int64), 0)  # inner 0: TF checks nothing
    check(np.zeros((3, 0), f), np.array([1, 2], np.int64), 0)
    check(np.zeros((3, 0), f), np.array([5, -1], np.int64), 0, resource=True)  # ResourceGather checks
    check(np.zeros((3, 0), f), np.array([1, 2], np.int64), 0, resource=True)
    check(np.zeros((2, 0, 4), f), np.array([9], np.int32), 1)   # axis dim 0, but outer*inner > 0
    check(np.ones((2, 3), f), np.zeros((0, 5), np.int32), 1)    # empty ids of rank 2
    check(np.ones((2, 3), f), np.zeros((4, 0), np.int32), 0)


@pytest.mark.parametrize("bad", [-1, 3, I64.max, I64.min, 2**31, -2**31])
def test_gather_out_of_range_ids_set_error(bad):
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    ids = np.array([[0, 1], [bad, 2]], np.int64)
    check(params, ids, 0)
    err = new_error_buffer()
    gather(params, ids, 0, 0, 0, err)
    _, tf_err = tf_gather(params, ids, 0)
    assert err[0] != 0 and error_text(err) in tf_err  # TF's own words: "indices[1,0] = -1 is not in [0, 3)"


def test_gather_large_ids_vector(rng):
    params = random_params(rng, (1000, 7), np.float32)
    ids = rng.integers(0, 1000, size=20000).astype(np.int64)
    check(params, ids, 0)
    check(params.T.copy(), ids % 7, 1)


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
def test_gather_batch_dims_random(rng, id_dtype):
    for _ in range(40):
        batch_dims = int(rng.integers(1, 3))
        batch = tuple(int(d) for d in rng.integers(0 if rng.random() < 0.1 else 1, 4, size=batch_dims))
        rest = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 3))))
        axis = batch_dims + int(rng.integers(0, len(rest)))
        params = random_params(rng, batch + rest, np.float32)
        ids_batch = batch if rng.random() < 0.9 else tuple(d + 1 for d in batch)  # TF rejects a mismatch
        ids = random_ids(rng, params.shape[axis], ids_batch + tuple(int(d) for d in rng.integers(0, 3, size=int(rng.integers(0, 2)))),
                         id_dtype, bad_rate=0.3)
        check(params, ids, axis, batch_dims=batch_dims)

"""The fused hash-bucket string bag: kernel against TF's own column chain, and the spec rewrite."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import hashed_column_spec
from test_embedding_bag import COMBINERS, tf_chain
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.feature_column.string_bag import fuse_string_bags
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.string_bag import string_bag

POOL = [b"", b"", b"a", "\u00e9t\u00e9 \u4e2d".encode(), b"x" * 300, b"id_7", b"\x00\xff", b"8" * 23, b"9" * 24]


def pool(strings):
    flat = list(strings.ravel())
    offsets = np.zeros(len(flat) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in flat])
    data = np.frombuffer(b"".join(flat) + b"\0", np.uint8)
    return np.arange(len(flat), dtype=np.int64).reshape(strings.shape), offsets, data


def tf_string_chain(strings, new_shape, table, buckets, combiner):
    """What a hash-bucket embedding column computes from a dense string input, op for op."""
    s = tf.constant(strings, tf.string)
    where = tf.where(tf.not_equal(s, ""))
    ids = tf.strings.to_hash_bucket_fast(tf.gather_nd(s, where), buckets)
    if new_shape is not None:
        where, shape = tf.raw_ops.SparseReshape(input_indices=where, input_shape=tf.shape(s, out_type=tf.int64),
                                                new_shape=tf.constant(new_shape, tf.int64))
    else:
        shape = tf.shape(s, out_type=tf.int64)
    return tf_chain(where, ids, shape, table, combiner)


def same_as_tf(got, err, tf_result):
    """The kernel's ``got`` equals TF's result, or its error ``err`` (None: none) is in the
    InvalidArgumentError TF raises; ``tf_result``: computes TF's result."""
    if err is not None:
        with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
            tf_result()
        assert err in tf_err.value.message
        return
    np.testing.assert_array_equal(got, tf_result().numpy())


def _run(strings, new_shape, table, buckets, mode):
    handles, offsets, data = pool(strings)
    shape = np.array(new_shape if new_shape is not None else strings.shape, np.int64)
    err = new_error_buffer()
    out = string_bag(handles, offsets, data, shape, table, buckets, mode, err)
    return out, (error_text(err) if err[0] else None)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_matches_tf_chain(mode, dtype):
    rng = np.random.default_rng()
    for rows, k in ((0, 4), (1, 1), (7, 4), (64, 3), (33, 30)):  # 30 slots: TF's 8-wide blocks too
        strings = rng.choice(np.array(POOL, object), size=(rows, k))
        strings[rng.random(rows) < 0.2] = b""                      # empty rows
        buckets = int(rng.integers(1, 50))
        table = rng.standard_normal((buckets, 5)).astype(dtype)
        for new_shape in (None, [rows, k], [-1, k], [rows * k, -1], [rows * k, 1]):
            got, err = _run(strings, new_shape, table, buckets, mode)  # an error: [0, -1] of an empty batch
            same_as_tf(got, err, lambda: tf_string_chain(strings, new_shape, table, buckets, COMBINERS[mode]))


def test_kernel_regroups_rows_as_sparse_reshape_does():
    strings = np.array([[b"a", b"", b"b", b"c"], [b"", b"", b"d", b""]], object)
    table = np.arange(40, dtype=np.float32).reshape(20, 2)
    for new_shape in ([4, 2], [8, -1], [-1, 4], [1, 8]):
        got, err = _run(strings, new_shape, table, 20, 0)
        assert err is None, err
        np.testing.assert_array_equal(got, tf_string_chain(strings, new_shape, table, 20, "sum").numpy())


@pytest.mark.parametrize("new_shape", [[3, 3], [-1, 3], [-1, -1], [2, -5], [0, -1]])
def test_bad_shape_gets_tf_sparse_reshape_message(new_shape):
    strings = np.array([[b"a", b"b"], [b"", b"c"]], object)
    table = np.ones((10, 3), np.float32)
    _, err = _run(strings, new_shape, table, 10, 1)
    assert err is not None
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
        tf_string_chain(strings, new_shape, table, 10, "mean")
    assert err in tf_err.value.message


def test_table_smaller_than_buckets_is_an_error_like_tf():
    strings = np.array([[b"a", b"b", b"c", b"d", b"e"]], object)
    table = np.ones((1, 3), np.float32)  # every id but 0 is outside
    _, err = _run(strings, None, table, 1000, 1)
    assert err is not None and "is not in [0, 1)" in err
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"is not in \[0, 1\)"):
        tf_string_chain(strings, None, table, 1000, "mean")


def test_rewrite_keeps_a_filter_that_drops_other_strings():
    spec = hashed_column_spec(tf.string)
    for rewrite in SPEC_REWRITES[:SPEC_REWRITES.index(fuse_string_bags)]:
        spec, _ = rewrite(spec)
    blank = next(n for n in spec["nodes"] if n["op"] == "Const" and n["attrs"]["value"]["values"] == [""])
    blank["attrs"]["value"]["values"] = ["x"]  # NotEqual(S, "x") keeps "" but drops "x": not ours
    assert fuse_string_bags(spec) == (spec, 0)

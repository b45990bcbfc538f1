"""StringSplitV2 (kernels/string_split.py) against TF's own op: every separator kind (one byte,
several, overlapping candidates, whitespace), maxsplit values including 0 and TF's "rest after the
last split" quirk, empty strings and batches, strings past a tstring's inline capacity; and fused,
where a tags field splits, hashes and pools in one op."""
import ctypes

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

import tf_blade
from conftest import op_counts
from tf_blade.kernels.string_split import string_split_v2
from tf_blade.kernels.strings import tstrings_from_bytes

EDGES = [b"", b" ", b"|", b"||", b"|a||b|", b" a  b ", b"a b ", b"  a ", b"a<>b<>", b"<><>", b"aaa", b"aaaa",
         b"\x0ba\x0cb\x00c\td\re\nf", b"x" * 40 + b"|" + b"y" * 30, b"\xc3\xa9|\xe4\xb8\xad"]
SEPS = [b"|", b"", b"<>", b"aa", b" ", b"\x00"]
MAXSPLITS = [-1, 0, 1, 2, 5]


def split(strings, sep, maxsplit):
    """The kernel over tstrings laid out as tf_blade lays out inputs; tokens read back as bytes."""
    buf = tstrings_from_bytes(strings)
    sep_buf = tstrings_from_bytes([sep])
    indices, views, shape = string_split_v2(np.arange(len(strings)), buf, buf[:0], np.zeros(1, np.int64),
                                            sep_buf, sep_buf[:0], maxsplit)
    words = views.view(np.uint64).reshape(-1, 3)
    assert np.all(words[:, 0] & 3 == 3)  # VIEW tstrings
    tokens = [ctypes.string_at(int(w[1]), int(w[0]) >> 2) for w in words]  # buf is still alive
    return indices, tokens, shape


def check(strings, sep, maxsplit):
    want = tf.raw_ops.StringSplitV2(input=tf.constant(strings, tf.string), sep=tf.constant(sep), maxsplit=maxsplit)
    indices, tokens, shape = split(strings, sep, maxsplit)
    np.testing.assert_array_equal(indices, want.indices.numpy().reshape(-1, 2))
    assert tokens == want.values.numpy().tolist()
    np.testing.assert_array_equal(shape, want.shape.numpy())


@pytest.mark.parametrize("sep", SEPS)
@pytest.mark.parametrize("maxsplit", MAXSPLITS)
def test_edge_cases_split_as_tf(sep, maxsplit):
    check(EDGES, sep, maxsplit)
    check([], sep, maxsplit)
    check([b""], sep, maxsplit)


def test_many_tokens_outgrow_the_first_guess(rng):
    # room for 4 tokens a string at first: one string of 5,000 and many of 60 make it grow twice
    strings = [b"|" * 5000] + [b"|".join(b"t%d" % v for v in rng.integers(0, 9, 60)) for _ in range(50)]
    for sep in (b"|", b""):
        check(strings, sep, -1)


@settings(max_examples=60, deadline=None)
@given(strings=st.lists(st.binary(max_size=40).map(lambda b: bytes(b" \t\x0b|<>ab\x00"[c % 9] for c in b)), max_size=12),
       sep=st.sampled_from(SEPS + [b"ab", b"|a"]), maxsplit=st.sampled_from(MAXSPLITS))
def test_split_hypothesis(strings, sep, maxsplit):
    check(strings, sep, maxsplit)


def _hash_tokens(values):  # a 2**62-bucket hash shows the tokens' bytes in a numeric output
    return tf.strings.to_hash_bucket_fast(values, 2**62)


@pytest.mark.parametrize("sep,maxsplit", [("|", -1), ("", -1), ("<>", 1), (",", 0)])
def test_fused_split_matches_tf(rng, sep, maxsplit):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def sparse(s):
        st_ = tf.compat.v1.strings.split(s, sep or None, maxsplit=maxsplit, result_type="SparseTensor")
        return {"indices": st_.indices, "hashes": _hash_tokens(st_.values), "shape": st_.dense_shape}

    fused = tf_blade.optimize(sparse, min_cluster_size=1).signatures["serving_default"]
    counts = op_counts(fused)
    assert "StringSplitV2" not in counts and counts["BladeFusedCall"] == 1, counts
    words = np.array(["", "a", "bb", "c c", "<>", "|", ",", "\t", "x" * 30])
    for n in (0, 1, 33):
        s = tf.constant(["".join(rng.choice(words, rng.integers(0, 6))) for _ in range(n)], tf.string)
        got, want = fused(s), sparse(s)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_numpy_bridge_splits_as_the_native_op():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def sparse(s):  # the bridge lays the strings out itself: short ones inline, long ones after
        st_ = tf.compat.v1.strings.split(s, "|", result_type="SparseTensor")
        return {"indices": st_.indices, "hashes": _hash_tokens(st_.values), "shape": st_.dense_shape}

    fused = tf_blade.optimize(sparse, bridge="numpy", min_cluster_size=1).signatures["serving_default"]
    assert "StringSplitV2" not in op_counts(fused)
    s = tf.constant(["a|b", "", "x" * 40 + "|yy|" + "z" * 23, "|||"])
    got, want = fused(s=s), sparse(s)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_tags_field_splits_hashes_and_pools_in_one_op(rng):
    table = tf.Variable(rng.standard_normal((1000, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.string)])
    def tags(s, sep):  # the separator an input, not a constant
        ids = tf.strings.to_hash_bucket_fast(tf.strings.split(s, sep), 1000)
        return tf.reduce_mean(tf.ragged.map_flat_values(tf.nn.embedding_lookup, table, ids), axis=1)

    fused = tf_blade.optimize(tags).signatures["serving_default"]
    assert set(op_counts(fused)) - {"Placeholder", "Identity", "NoOp"} == {"BladeFusedCall"}, op_counts(fused)
    for n in (0, 1, 300):
        s = tf.constant(["|".join(f"t{v}" for v in rng.zipf(1.3, rng.integers(0, 6))) for _ in range(n)], tf.string)
        got = fused(s=s, sep=tf.constant("|"))
        got = next(iter(got.values())) if isinstance(got, dict) else got
        np.testing.assert_array_equal(got.numpy(), tags(s, tf.constant("|")).numpy())  # NaN rows too


@pytest.mark.parametrize("sep,twice", [("1", False), ("5", False), ("1", True)])
def test_tokens_keep_an_intermediate_source_alive(rng, sep, twice):
    # The tokens point into AsString's buffer, made inside the op and read by nothing else: unless
    # the tokens hold it, Numba frees it after the split and the hash reads reused memory (without
    # that reference, 3 of 60 such calls differed; a freed buffer is not always reused at once).
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def f(x):
        s = tf.compat.v1.strings.split(tf.strings.as_string(x, width=40, fill="0"), sep, result_type="SparseTensor")
        if twice:  # tokens of tokens: their bytes are still AsString's (10 of 40 calls differed)
            s = tf.compat.v1.strings.split(s.values, "2", result_type="SparseTensor")
        return {"indices": s.indices, "hashes": _hash_tokens(s.values)}

    fused = tf_blade.optimize(f, min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1 and "StringSplitV2" not in op_counts(fused)
    for n in [10, 100, 1000, 3000] * 5:
        x = tf.constant(rng.integers(0, 10**12, n))
        got, want = fused(x=x), f(x)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())

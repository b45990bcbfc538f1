"""Sequence feature columns (tf_keras SequenceFeatures): hashed, identity and vocabulary sequence
columns, embedded and as indicators, plus a sequence_numeric_column. Optimized, the whole layer is
one fused op; the check that every column has the same sequence lengths (a tf.debugging assert,
unwrapped by passes/unguard_asserts.py) runs inside it. Results are bit-exact with TF, and
mismatched lengths fail with TF's own "assertion failed" text."""
import re

import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

FC = tf.feature_column
SPECS = {"words": tf.SparseTensorSpec([None, None], tf.string), "ids": tf.SparseTensorSpec([None, None], tf.int64),
         "tags": tf.SparseTensorSpec([None, None], tf.string), "price": tf.SparseTensorSpec([None, None], tf.float32)}


@pytest.fixture(scope="module")
def models():
    import tf_keras
    words = FC.sequence_categorical_column_with_hash_bucket("words", 40)
    ids = FC.sequence_categorical_column_with_identity("ids", 20, default_value=0)
    tags = FC.sequence_categorical_column_with_vocabulary_list("tags", ["x", "y", "z"], num_oov_buckets=2)
    module = tf.Module()  # optimize() finds the vocabulary's static table through the module
    module.layer = tf_keras.experimental.SequenceFeatures([
        FC.embedding_column(words, 4), FC.indicator_column(ids), FC.embedding_column(tags, 3, combiner="sum"),
        FC.sequence_numeric_column("price")])
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[SPECS])
    module.serve.get_concrete_function()
    return module.serve, tf_blade.optimize(module, bridge="native").signatures["serve"]


def _sparse(lengths, values):
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([np.arange(k) for k in lengths]) if len(lengths) else np.zeros(0, int)
    width = max(int(lengths.max()) if len(lengths) else 0, 1)
    return tf.SparseTensor(np.stack([rows, cols], 1).astype(np.int64).reshape(-1, 2), values, [len(lengths), width])


def _batch(rng, n, lengths=None):
    lengths = rng.integers(0, 5, n) if lengths is None else lengths
    total = int(lengths.sum())
    vocab = np.array([b"x", b"y", b"z", b"", "\u00e9".encode(), b"w" * 40], dtype=object)
    words = vocab[rng.integers(0, len(vocab), total)] if total else np.zeros(0, object)
    ids = rng.integers(-2, 25, total)  # out of range -> default 0
    return {"words": _sparse(lengths, tf.constant(words, tf.string)), "ids": _sparse(lengths, tf.constant(ids, tf.int64)),
            "tags": _sparse(lengths, tf.constant(np.roll(words, 1), tf.string)),
            "price": _sparse(lengths, tf.constant(rng.standard_normal(total).astype(np.float32)))}


def _call(fn, opt, x):
    flat = tf.nest.flatten(x, expand_composites=True)
    return fn(x), opt(*flat)


def test_sequence_layer_is_one_fused_op(models):
    _, opt = models
    counts = op_counts(opt)
    assert counts["BladeFusedCallStateful"] == 1 and "BladeFusedCall" not in counts, counts  # stateful: it asserts
    assert not {"If", "Assert", "SegmentMax", "Ceil", "SparseToDense"} & set(counts), counts


@pytest.mark.parametrize("n", [0, 1, 7, 200])
def test_sequence_columns_match_tensorflow(models, rng, n):
    fn, opt = models
    want, got = _call(fn, opt, _batch(rng, n))
    for w, g in zip(want, got):  # (sequence input, lengths)
        assert w.dtype == g.dtype
        np.testing.assert_array_equal(w.numpy(), g.numpy())


def test_mismatched_sequence_lengths_fail_as_tf_fails(models, rng):
    fn, opt = models
    x = _batch(rng, 6, lengths=np.array([2, 1, 0, 3, 1, 1]))
    x["ids"] = _batch(rng, 6, lengths=np.array([2, 1, 1, 3, 1, 1]))["ids"]
    messages = []
    for call in (lambda: fn(x), lambda: opt(*tf.nest.flatten(x, expand_composites=True))):
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            call()
        messages.append(re.search(r"assertion failed: [^\n]*", info.value.message).group(0))
    assert messages[0] == messages[1], messages

"""Column types beyond hash buckets (issue 4), all in one DenseFeatures layer: identity (with a
default), int hash, bucketized (direct and embedded), indicator, weighted, numeric with a
normalizer, and sqrtn with max_norm. Optimized, the whole layer is one fused op with no
feature-column op left outside, and it gives TF's results on random and edge batches:
bit-exact, the max_norm column's l2-norm Sum too (TF's order, see kernels/reduce.py)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

FC = tf.feature_column
LEAF_OPS = {"Placeholder", "NoOp", "Identity", "BladeFusedCall", "Const", "ReadVariableOp", "StatefulPartitionedCall",
            "PartitionedCall"}
WIDTH = 3  # ids per row of every categorical input ([batch, WIDTH], padded with -1 / "")


def columns():
    ident = FC.categorical_column_with_identity("ident", 40, default_value=3)
    hashed_int = FC.categorical_column_with_hash_bucket("hint", 50, dtype=tf.int64)
    hashed = FC.categorical_column_with_hash_bucket("hstr", 30)
    weighted = FC.weighted_categorical_column(FC.categorical_column_with_hash_bucket("wstr", 20), "weight")
    price = FC.numeric_column("price", shape=(2,))
    return {
        "embedding": [FC.embedding_column(ident, 4), FC.embedding_column(hashed_int, 3, combiner="sum"),
                      FC.embedding_column(FC.bucketized_column(price, [0.0, 1.0, 5.0]), 2),
                      FC.embedding_column(weighted, 3)],
        "dense": [FC.bucketized_column(price, [-1.0, 0.0, 0.5, 2.0]), FC.indicator_column(hashed),
                  FC.numeric_column("count", shape=(3,), normalizer_fn=lambda x: (x - 2.0) / 4.0)],
        "max_norm": [FC.embedding_column(hashed_int, 5, combiner="sqrtn", max_norm=0.5)],
    }


SPECS = {"ident": tf.TensorSpec([None, WIDTH], tf.int64), "hint": tf.TensorSpec([None, WIDTH], tf.int64),
         "hstr": tf.TensorSpec([None, WIDTH], tf.string), "wstr": tf.TensorSpec([None, WIDTH], tf.string),
         "weight": tf.TensorSpec([None, WIDTH], tf.float32),
         "price": tf.TensorSpec([None, 2], tf.float32), "count": tf.TensorSpec([None, 3], tf.float32)}


def batch(rng, n, empty_fraction=0.2):
    present = rng.random((n, WIDTH)) > 0.3
    present[rng.random(n) < empty_fraction] = False
    ints = rng.integers(0, 45, (n, WIDTH))  # identity ids 40..44 are out of range -> default 3
    hint = rng.integers(-2**63, 2**63 - 1, (n, WIDTH), dtype=np.int64, endpoint=True)
    hint[:, 0] = rng.integers(0, 5, n)      # duplicates
    words = np.array([b"a", b"b", "\u00e9".encode(), b"x" * 70], dtype=object)
    price = rng.choice([-2.0, -1.0, 0.0, 0.25, 0.5, 1.0, 4.99, 5.0, np.nan, np.inf], size=(n, 2))
    return {"ident": np.where(present, ints, -1), "hint": np.where(present, hint, -1),
            "hstr": np.where(present, words[rng.integers(0, 4, (n, WIDTH))], b""),
            # weighted ids and their weights must drop the same entries: every one is present
            "wstr": words[rng.integers(0, 4, (n, WIDTH))], "weight": rng.standard_normal((n, WIDTH)).astype(np.float32),
            "price": price.astype(np.float32), "count": rng.standard_normal((n, 3)).astype(np.float32) * 10}


@pytest.fixture(scope="module")
def models():
    import tf_keras
    layers = {name: tf_keras.layers.DenseFeatures(cols) for name, cols in columns().items()}
    fn = tf.function(lambda x: {name: layer(x) for name, layer in layers.items()}, input_signature=[SPECS])
    fn.get_concrete_function()
    return fn, tf_blade.optimize(fn, bridge="native")


def test_every_column_type_fuses_into_one_op(models):
    _, opt = models
    counts = op_counts(opt.signatures["serving_default"])
    assert counts["BladeFusedCall"] == 1, counts
    assert set(counts) <= LEAF_OPS, set(counts) - LEAF_OPS
    assert not opt.report.functions["serving_default"].get("compile_failed")


@pytest.mark.parametrize("n", [0, 1, 9, 300])
def test_column_types_match_tensorflow(models, rng, n):
    fn, opt = models
    x = batch(rng, n, empty_fraction=1.0 if n == 9 else 0.2)
    want = fn({k: tf.constant(v) for k, v in x.items()})
    got = opt.signatures["serving_default"](**{"x_" + k: tf.constant(v) for k, v in x.items()})
    for name in ("embedding", "dense"):
        np.testing.assert_array_equal(want[name].numpy(), got[name].numpy(), err_msg=name)
    np.testing.assert_array_equal(want["max_norm"].numpy(), got["max_norm"].numpy())

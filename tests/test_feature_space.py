"""Keras FeatureSpace (tf_keras.utils.FeatureSpace), issue 4: string and integer categorical
features (StringLookup/IntegerLookup + CategoryEncoding with its range assert), hashed features,
a normalized and a rescaled float and a hashed cross, concatenated. Optimized, the whole space is
one fused op with no preprocessing op left in TF, and its output is bit-exact with TF's on random
and edge batches (unseen strings and integers, negative and huge ids, an empty batch)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

SPECS = {"city": tf.TensorSpec([None], tf.string), "age": tf.TensorSpec([None], tf.int64),
         "income": tf.TensorSpec([None], tf.float32), "item": tf.TensorSpec([None], tf.int64),
         "tag": tf.TensorSpec([None], tf.string), "price": tf.TensorSpec([None], tf.float32)}
KEPT = {"Placeholder", "Identity", "NoOp", "BladeFusedCall", "BladeFusedCallStateful"}


def _data(rng, n, unseen=False):
    cities = ["a", "b", "c", "d"] + (["zz", "", "\u00e9"] if unseen else [])
    items = rng.integers(0, 50, n) if not unseen else rng.choice([0, 7, 49, 50, -1, 2**63 - 1, -2**63], n)
    return {"city": rng.choice(cities, n).astype(object), "age": rng.integers(-5, 120, n).astype(np.int64),
            "income": (rng.standard_normal(n) * 1e3).astype(np.float32), "item": np.asarray(items, np.int64),
            "tag": rng.choice(["x", "y", "zz", ""], n).astype(object),
            "price": rng.standard_normal(n).astype(np.float32)}


@pytest.fixture(scope="module")
def models():
    import tf_keras
    FS = tf_keras.utils.FeatureSpace
    space = FS(features={"city": FS.string_categorical(num_oov_indices=1), "age": FS.integer_hashed(num_bins=16),
                         "income": FS.float_normalized(), "item": FS.integer_categorical(),
                         "tag": FS.string_hashed(num_bins=8), "price": FS.float_rescaled(scale=2.0, offset=1.0)},
               crosses=[FS.cross(feature_names=("city", "tag"), crossing_dim=32)], output_mode="concat")
    space.adapt(tf.data.Dataset.from_tensor_slices(_data(np.random.default_rng(7), 300)).batch(100))
    module = tf.Module()  # optimize() finds the lookups' static tables through the module
    module.space = space
    module.serve = tf.function(lambda x: module.space(x), input_signature=[SPECS])
    module.serve.get_concrete_function()
    return module, tf_blade.optimize(module, bridge="native").signatures["serve"]


def test_feature_space_is_one_fused_op(models):
    _, fused = models
    counts = op_counts(fused)
    assert counts["BladeFusedCall"] + counts["BladeFusedCallStateful"] == 1 and set(counts) <= KEPT, counts


@pytest.mark.parametrize("n,unseen", [(0, False), (1, False), (37, False), (64, True)])
def test_feature_space_matches_tensorflow(models, rng, n, unseen):
    module, fused = models
    x = {k: tf.constant(v) for k, v in _data(rng, n, unseen).items()}
    want = module.serve(x).numpy()
    got = fused(**{"x_" + k: v for k, v in x.items()})
    got = (next(iter(got.values())) if isinstance(got, dict) else got).numpy()
    assert want.dtype == got.dtype and want.shape == got.shape
    np.testing.assert_array_equal(want.view(np.uint32), got.view(np.uint32))

"""Keras (tf_keras) preprocessing layers feeding embeddings with mean pooling, the keras-prep
shape of issue 4/5: StringLookup and IntegerLookup with a fixed vocabulary (static tables, frozen),
Hashing (plain and salted: StringToHashBucketStrong), HashedCrossing (SparseCross),
Discretization and Normalization, all in one fused op. Lookups, hashes and buckets are exact, and so are the pooled means (TF's order,
kernels/reduce.py). CategoryEncoding (count and multi-hot: DenseBincount) fuses
with the range check Keras puts before it, which fails with Keras' message."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts, running_nodes

TF_FEATURE_OPS = {"LookupTableFindV2", "StringToHashBucketFast", "StringToHashBucketStrong", "Bucketize",
                  "ResourceGather", "Mean", "SparseCross"}


@pytest.fixture(scope="module")
def models():
    import tf_keras
    L = tf_keras.layers
    module = tf.Module()
    module.words = L.StringLookup(vocabulary=["a", "b", "c", "\u00e9"], num_oov_indices=2)
    module.ids = L.IntegerLookup(vocabulary=[3, 7, 11, -5])
    module.hashing = L.Hashing(num_bins=50)
    module.salted = L.Hashing(num_bins=30, salt=[123, -456])
    module.buckets = L.Discretization(bin_boundaries=[0.0, 1.0, 2.5])
    module.norm = L.Normalization(mean=2.0, variance=4.0)
    module.embeddings = [L.Embedding(n, 4) for n in (7, 6, 50, 30, 4)]
    module.crossing = L.HashedCrossing(num_bins=20)
    module.crossed_embedding = L.Embedding(20, 4)

    def serve(words, ids, price):
        pooled = [tf.reduce_mean(emb(layer(x)), axis=1) for emb, layer, x in zip(
            module.embeddings, (module.words, module.ids, module.hashing, module.salted, module.buckets),
            (words, ids, words, words, price))]
        crossed = module.crossed_embedding(module.crossing((words[:, 0], ids[:, 0])))
        return tf.concat(pooled + [crossed, module.norm(price)], axis=1)

    module.serve = tf.function(serve, input_signature=[tf.TensorSpec([None, 3], tf.string),
                                                       tf.TensorSpec([None, 2], tf.int64),
                                                       tf.TensorSpec([None, 2], tf.float32)])
    module.serve.get_concrete_function()
    return module, tf_blade.optimize(module)


def test_preprocessing_layers_fuse_into_one_op(models):
    import json
    from tf_blade.feature_column.pooled_gather import fuse_pooled_gathers
    _, opt = models
    counts = op_counts(opt.signatures["serve"])
    assert counts["BladeFusedCall"] == 1 and not TF_FEATURE_OPS & set(counts), counts
    (fused,) = [n for n in running_nodes(opt.signatures["serve"].graph.as_graph_def()) if n.op == "BladeFusedCall"]
    _, pooled = fuse_pooled_gathers(json.loads(fused.attr["cluster"].s))
    assert pooled == 5  # every Embedding + reduce_mean is one pooled gather


@pytest.mark.parametrize("n", [0, 1, 64])
def test_preprocessing_layers_match_tensorflow(models, rng, n):
    module, opt = models
    words = np.array([b"a", b"c", b"zz", b"", "\u00e9".encode(), b"x" * 40], dtype=object)[rng.integers(0, 6, (n, 3))]
    ids = np.array([3, 7, 11, -5, 0, 2**63 - 1, -2**63])[rng.integers(0, 7, (n, 2))]
    price = rng.choice([-1.0, 0.0, 0.5, 1.0, 2.5, 7.0, np.nan], (n, 2)).astype(np.float32)
    args = (tf.constant(words, tf.string), tf.constant(ids, tf.int64), tf.constant(price))
    want, got = module.serve(*args).numpy(), opt.signatures["serve"](*args).numpy()
    np.testing.assert_array_equal(got, want)


def test_category_encoding_fuses_with_its_assert(rng):
    import tf_keras
    L = tf_keras.layers
    count = L.CategoryEncoding(num_tokens=6, output_mode="count")
    multi_hot = L.CategoryEncoding(num_tokens=6, output_mode="multi_hot")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.int64)])
    def encode(x):
        ids = x % 7  # 6 is out of range: Keras' Assert rejects it
        return {"out": tf.concat([count(ids), multi_hot(ids)], 1)}
    fused = tf_blade.optimize(encode).signatures["serving_default"]
    counts = op_counts(fused)
    # The range check (an AssertGuard) fuses too, into the same op as the counts (its control
    # edges on the counts' constants moved to their consumers): the stateful twin op, once
    assert counts["BladeFusedCallStateful"] == 1 and "BladeFusedCall" not in counts, counts
    assert not {"DenseBincount", "Assert", "If"} & set(counts), counts
    for n in (0, 1, 40):
        x = tf.constant(rng.integers(0, 6, (n, 3)))
        np.testing.assert_array_equal(fused(x)["out"].numpy(), encode(x)["out"].numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="values < num_tokens with num_tokens=6"):
        fused(tf.constant([[1, 2, 6]], tf.int64))


@pytest.mark.parametrize("package,subclass", [("tf_keras", False), ("keras", False), ("tf_keras", True)])
def test_a_keras_model_is_optimized_through_its_call(package, subclass, tmp_path):
    """optimize(model) serves the model's call, one input per model input: not the tf.functions
    Keras keeps on it (after predict(), predict_function, which reads a dataset iterator). The
    written signature is keyed as the package's own serving export keys it (tf_keras:
    tf.saved_model.save, outputs by layer name; Keras 3: model.export), so a request and a
    response built for the stock export fit."""
    K = pytest.importorskip(package)
    inp = K.Input(shape=(None,), dtype="string", name="user-words")
    pooled = K.layers.GlobalAveragePooling1D()(K.layers.Embedding(50, 2)(K.layers.Hashing(50)(inp)))
    model_class = type("UserModel", (K.Model,), {}) if subclass else K.Model  # a user's subclass: its own module
    model = model_class(inp, [K.layers.Dense(1, name="ctr")(pooled), K.layers.Dense(2, name="aux")(pooled)])
    x = tf.constant([["a", "b"], ["c", ""]])
    want = [t.numpy() for t in model(x)]
    model.predict(x, verbose=0)
    if package == "tf_keras":
        tf.saved_model.save(model, str(tmp_path / "stock"))
    else:
        model.export(str(tmp_path / "stock"), verbose=False)
    stock = tf.saved_model.load(str(tmp_path / "stock")).signatures["serving_default"]
    opt = tf_blade.optimize(model, str(tmp_path / "opt"))
    assert list(opt.signatures) == ["serving_default"] and opt.report.fused_ops == 1
    loaded = tf_blade.load(str(tmp_path / "opt")).signatures["serving_default"]
    assert loaded.structured_input_signature == stock.structured_input_signature
    assert loaded.structured_outputs == stock.structured_outputs
    reference = stock(user_words=x)
    np.testing.assert_allclose(np.sort(np.concatenate([t.numpy().ravel() for t in reference.values()])),
                               np.sort(np.concatenate(want, None)), rtol=1e-6)  # the stock export is the model
    for fn in (opt.signatures["serving_default"], loaded):
        got = fn(user_words=x)
        if isinstance(got, dict):
            assert got.keys() == reference.keys()
            for key in got:
                np.testing.assert_array_equal(got[key].numpy(), reference[key].numpy())
        else:  # in process, Keras 3's call returns the model's outputs as they are
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w)

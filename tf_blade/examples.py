"""The bundled example recommendation models, built from synthetic data (no downloads).

criteo_feature_model: N categorical string columns (Criteo-like), each
``embedding_column(categorical_column_with_hash_bucket(...), dim, combiner)`` under a
tf_keras DenseFeatures layer; every column is a dense [batch, max_ids] string input padded with
"" (feature columns drop "" as missing), so rows carry 0..max_ids ids.
criteo_wdl_model: those columns plus numeric ones, a wide linear part and a DNN.
keras_prep_model: the same string columns through Keras Hashing + Embedding + mean, and a DNN.
column_kinds_model, keras_layers_model: small layers with one column (or Keras layer) of each other
kind tf_blade fuses, for `tf-blade precompile`.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

# Criteo-scale hash bucket sizes, 20 .. 300,000 (the real dataset's cardinalities, capped).
CRITEO_BUCKETS = [1460, 583, 300000, 300000, 305, 24, 12517, 633, 3, 93145, 5683, 300000, 3194,
                  27, 14992, 300000, 10, 5652, 2173, 4, 300000, 18, 15, 286181, 105, 142572]


def column_names(n_columns):
    return [f"C{i + 1}" for i in range(n_columns)]


def criteo_feature_model(n_columns=26, dim=16, combiner="mean", dtype=tf.string, seed=0):
    """A tf.Module whose ``serve`` signature maps {C1..Cn: [batch, k] ids} -> {"features": [batch, n*dim]}."""
    import tf_keras

    fc = tf.feature_column
    tf.random.set_seed(seed)
    columns = []
    for i, name in enumerate(column_names(n_columns)):
        buckets = CRITEO_BUCKETS[i % len(CRITEO_BUCKETS)]
        cat = fc.categorical_column_with_hash_bucket(name, buckets, dtype=dtype)
        columns.append(fc.embedding_column(cat, dim, combiner=combiner))
    layer = tf_keras.layers.DenseFeatures(columns)
    module = tf.Module()
    module.layer = layer
    specs = [tf.TensorSpec([None, None], dtype, name=name) for name in column_names(n_columns)]

    return _with_serve(module, lambda *features: {"features": layer(dict(zip(column_names(n_columns), features)))},
                       column_names(n_columns), specs)


def numeric_names(n_numeric):
    return [f"I{i + 1}" for i in range(n_numeric)]


def criteo_wdl_model(n_columns=26, n_numeric=13, dim=16, hidden=(1024, 512, 256), seed=0):
    """Wide & deep over the Criteo layout: the categorical columns of ``criteo_feature_model``
    (deep: embeddings, mean) plus ``n_numeric`` numeric columns (log1p-normalised) feed a
    ``hidden`` ReLU DNN; the wide part is a linear model over the same hashed columns (an
    embedding of width 1, combiner sum, i.e. the sum of the ids' weights). ``serve`` maps
    {C1..Cn: [batch, k] strings, I1..Im: [batch, 1] float32} -> {"logit": [batch, 1]}."""
    import tf_keras

    fc = tf.feature_column
    tf.random.set_seed(seed)
    deep, wide = [], []
    for i, name in enumerate(column_names(n_columns)):
        cat = fc.categorical_column_with_hash_bucket(name, CRITEO_BUCKETS[i % len(CRITEO_BUCKETS)])
        deep.append(fc.embedding_column(cat, dim, combiner="mean"))
        wide.append(fc.embedding_column(cat, 1, combiner="sum"))
    numeric = [fc.numeric_column(name, normalizer_fn=lambda x: tf.math.log1p(tf.maximum(x, 0.0)))
               for name in numeric_names(n_numeric)]
    module = tf.Module()
    module.deep_input = tf_keras.layers.DenseFeatures(deep + numeric)
    module.wide_input = tf_keras.layers.DenseFeatures(wide)
    module.dnn = tf_keras.Sequential([tf_keras.layers.Dense(h, activation="relu") for h in hidden]
                                     + [tf_keras.layers.Dense(1)])
    names = column_names(n_columns) + numeric_names(n_numeric)
    specs = ([tf.TensorSpec([None, None], tf.string, name=n) for n in column_names(n_columns)]
             + [tf.TensorSpec([None, 1], tf.float32, name=n) for n in numeric_names(n_numeric)])

    def serve(*features):
        x = dict(zip(names, features))
        wide_logit = tf.reduce_sum(module.wide_input(x), axis=1, keepdims=True)
        return {"logit": module.dnn(module.deep_input(x)) + wide_logit}

    return _with_serve(module, serve, names, specs)


def keras_prep_model(n_columns=26, dim=16, hidden=(256, 128), seed=0):
    """The Criteo columns through Keras preprocessing layers, as a plain Keras pipeline writes
    them: per column ``Hashing(num_bins)`` -> ``Embedding(num_bins, dim)`` -> mean over the row's
    slots (the "" padding hashes like any string), concatenated into a small ReLU DNN.
    ``serve`` maps {C1..Cn: [batch, k] strings} -> {"logit": [batch, 1]}."""
    import tf_keras

    L = tf_keras.layers
    tf.random.set_seed(seed)
    buckets = [CRITEO_BUCKETS[i % len(CRITEO_BUCKETS)] for i in range(n_columns)]
    module = tf.Module()
    module.hashing = [L.Hashing(num_bins=b) for b in buckets]
    module.embeddings = [L.Embedding(b, dim) for b in buckets]
    module.dnn = tf_keras.Sequential([L.Dense(h, activation="relu") for h in hidden] + [L.Dense(1)])
    names = column_names(n_columns)

    def serve(*features):
        pooled = [tf.reduce_mean(emb(hashing(x)), axis=1)
                  for hashing, emb, x in zip(module.hashing, module.embeddings, features)]
        return {"logit": module.dnn(tf.concat(pooled, axis=1))}

    return _with_serve(module, serve, names, [tf.TensorSpec([None, None], tf.string, name=n) for n in names])


def _with_serve(module, body, names, specs):
    """``module`` with ``serve = tf.function(body)`` taking ``specs`` as the parameters ``names``
    (its SavedModel signature's argument names), traced once (which builds the layers' variables)."""
    import inspect
    body.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    module.serve = tf.function(body, input_signature=specs)
    module.serve.get_concrete_function()
    return module


def column_kinds_model(dim=2, seed=0):
    """One DenseFeatures layer with a column of each kind tf_blade fuses besides string hash
    buckets: identity (with a default), int hash, string and int vocabulary lists, weighted,
    crossed, bucketized (embedded and one-hot), indicator, normalized numeric, and a sparse
    (SparseTensor) string input pooled by sqrtn. Small: `tf-blade precompile` builds it so that
    models of these kinds find the kernel library compiled. Batches: ``column_kinds_batch``."""
    import tf_keras

    fc = tf.feature_column
    tf.random.set_seed(seed)
    price = fc.numeric_column("price", shape=(2,))
    vocab_words = fc.categorical_column_with_vocabulary_list("words", ["a", "b", "c"], num_oov_buckets=2)
    columns = [
        fc.embedding_column(fc.categorical_column_with_identity("ident", 40, default_value=3), dim),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("hashed", 50, dtype=tf.int64), dim, combiner="sum"),
        fc.embedding_column(vocab_words, dim),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("codes", [3, 5, 7], default_value=0)),
        fc.embedding_column(fc.weighted_categorical_column(
            fc.categorical_column_with_hash_bucket("weighted", 20), "weight"), dim),
        fc.embedding_column(fc.crossed_column(["words", "hashed"], 100), dim),
        fc.embedding_column(fc.bucketized_column(price, [0.0, 1.0, 5.0]), dim),
        fc.bucketized_column(price, [-1.0, 0.5]),
        fc.indicator_column(fc.categorical_column_with_hash_bucket("tags", 10)),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 30), dim, combiner="sqrtn"),
        fc.numeric_column("count", normalizer_fn=lambda x: (x - 2.0) / 4.0),
    ]
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    specs = {"ident": tf.TensorSpec([None, 3], tf.int64), "hashed": tf.TensorSpec([None, 3], tf.int64),
             "words": tf.TensorSpec([None, 3], tf.string), "codes": tf.TensorSpec([None, 3], tf.int64),
             "weighted": tf.TensorSpec([None, 3], tf.string), "weight": tf.TensorSpec([None, 3], tf.float32),
             "tags": tf.SparseTensorSpec([None, None], tf.string),
             "price": tf.TensorSpec([None, 2], tf.float32), "count": tf.TensorSpec([None, 1], tf.float32)}
    names = sorted(specs)
    return _with_serve(module, lambda *features: {"features": module.layer(dict(zip(names, features)))},
                       names, [specs[n] for n in names])


def column_kinds_batch(batch, seed=0):
    """A batch for ``column_kinds_model``: {name: array, or a SparseTensor for "tags"}; missing
    ids are -1 or "" (every weighted id is present: weights and ids must drop alike)."""
    rng = np.random.default_rng(seed)
    present = rng.random((batch, 3)) < 0.7
    words = np.array([b"a", b"b", b"c", b"zz"], dtype=object)
    counts = rng.integers(0, 4, batch)
    indices = np.array([[r, k] for r in range(batch) for k in range(counts[r])], np.int64).reshape(-1, 2)
    return {"ident": np.where(present, rng.integers(0, 45, (batch, 3)), -1),
            "hashed": np.where(present, rng.integers(-2**40, 2**40, (batch, 3)), -1),
            "words": np.where(present, words[rng.integers(0, 4, (batch, 3))], b""),
            "codes": np.where(present, rng.integers(2, 8, (batch, 3)), -1),
            "weighted": words[rng.integers(0, 4, (batch, 3))],
            "weight": rng.random((batch, 3)).astype(np.float32),
            "tags": tf.SparseTensor(indices, words[rng.integers(0, 4, len(indices))].astype(bytes),
                                    [batch, max(int(counts.max(initial=0)), 1)]),
            "price": rng.choice([-2.0, 0.0, 0.7, 3.0, 9.0], (batch, 2)).astype(np.float32),
            "count": rng.random((batch, 1)).astype(np.float32) * 5}


def signature_inputs(batch):
    """A batch as keyword arguments of a model's serving signature (what optimize() returns and a
    SavedModel serves): arrays as tensors, a SparseTensor ``x`` as its components x (indices),
    x_1 (values) and x_2 (dense shape), as TF flattens it."""
    out = {}
    for name, value in batch.items():
        if isinstance(value, tf.SparseTensor):
            out.update({name: value.indices, f"{name}_1": value.values, f"{name}_2": value.dense_shape})
        else:
            out[name] = tf.constant(value)
    return out


def keras_layers_model(dim=2, seed=0):
    """Keras preprocessing layers tf_blade fuses besides Hashing: StringLookup and IntegerLookup
    (fixed vocabularies), salted Hashing, Discretization and HashedCrossing, each feeding an
    Embedding pooled by mean, CategoryEncoding (multi-hot) and Normalization.
    ``serve`` maps {words: [batch, 3] strings, ids: [batch, 2] int64, price: [batch, 2] float32} ->
    {"features": [batch, width]}. Small, for `tf-blade precompile`."""
    import tf_keras

    L = tf_keras.layers
    tf.random.set_seed(seed)
    module = tf.Module()
    module.words = L.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=1)
    module.ids = L.IntegerLookup(vocabulary=[3, 7, 11])
    module.salted = L.Hashing(num_bins=30, salt=[12, 34])
    module.buckets = L.Discretization(bin_boundaries=[0.0, 1.0, 2.5])
    module.crossing = L.HashedCrossing(num_bins=20)
    module.multi_hot = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    module.norm = L.Normalization(mean=2.0, variance=4.0)
    module.embeddings = [L.Embedding(n, dim) for n in (4, 4, 30, 4, 20)]

    def serve(words, ids, price):
        looked_up = [module.words(words), module.ids(ids), module.salted(words), module.buckets(price)]
        pooled = [tf.reduce_mean(emb(x), axis=1) for emb, x in zip(module.embeddings, looked_up)]
        crossed = module.embeddings[-1](module.crossing((words[:, 0], ids[:, 0])))
        return {"features": tf.concat(pooled + [crossed, module.multi_hot(looked_up[1]), module.norm(price)], axis=1)}
    return _with_serve(module, serve, ["words", "ids", "price"],
                       [tf.TensorSpec([None, 3], tf.string), tf.TensorSpec([None, 2], tf.int64),
                        tf.TensorSpec([None, 2], tf.float32)])


def keras_layers_batch(batch, seed=0):
    """A batch for ``keras_layers_model``."""
    rng = np.random.default_rng(seed)
    return {"words": np.array([b"a", b"b", b"c", b"zz", b""], dtype=object)[rng.integers(0, 5, (batch, 3))],
            "ids": rng.choice([3, 7, 11, 4, -5], (batch, 2)).astype(np.int64),
            "price": rng.choice([-1.0, 0.0, 1.5, 3.0], (batch, 2)).astype(np.float32)}


def synthetic_numeric(batch, n_numeric=13, seed=0):
    """{I1..Im: [batch, 1] float32}: Criteo-like heavy-tailed counts."""
    rng = np.random.default_rng(seed + 1)
    return {name: rng.zipf(1.5, size=(batch, 1)).astype(np.float32) for name in numeric_names(n_numeric)}


def synthetic_batch(batch, n_columns=26, max_ids=4, empty_fraction=0.05, dtype=tf.string, seed=0):
    """{C1..Cn: [batch, max_ids]} with 1..max_ids ids per row (~empty_fraction rows empty).

    Ids repeat (Zipf-like) as real categorical traffic does; padding is "" (or -1 for ints).
    """
    rng = np.random.default_rng(seed)
    out = {}
    for name in column_names(n_columns):
        counts = rng.integers(1, max_ids + 1, size=batch)
        counts[rng.random(batch) < empty_fraction] = 0
        ids = rng.zipf(1.3, size=(batch, max_ids)) % 1_000_000
        mask = np.arange(max_ids)[None, :] < counts[:, None]
        if dtype == tf.string:
            values = np.char.add(f"{name}_", ids.astype(str)).astype(object)
            values[~mask] = b""
            out[name] = np.array([[v.encode() if isinstance(v, str) else v for v in row]
                                  for row in values], dtype=object).reshape(batch, max_ids)
        else:
            out[name] = np.where(mask, ids, -1).astype(np.int64)
    return out

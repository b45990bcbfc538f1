"""The bundled example recommendation models, built from synthetic data (no downloads).

criteo_feature_model: N categorical string columns (Criteo-like), each
``embedding_column(categorical_column_with_hash_bucket(...), dim, combiner)`` under a
tf_keras DenseFeatures layer; every column is a dense [batch, max_ids] string input padded with
"" (feature columns drop "" as missing), so rows carry 0..max_ids ids.
criteo_wdl_model: those columns plus numeric ones, a wide linear part and a DNN.
keras_prep_model: the same string columns through Keras Hashing + Embedding + mean, and a DNN.
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

    def serve(*features):
        return {"features": layer(dict(zip(column_names(n_columns), features)))}

    import inspect
    serve.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in column_names(n_columns)])
    module.serve = tf.function(serve, input_signature=specs)
    module.serve.get_concrete_function()  # builds the layer's variables
    return module


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

    import inspect
    serve.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    module.serve = tf.function(serve, input_signature=specs)
    module.serve.get_concrete_function()
    return module


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

    import inspect
    serve.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    module.serve = tf.function(serve, input_signature=[tf.TensorSpec([None, None], tf.string, name=n)
                                                       for n in names])
    module.serve.get_concrete_function()
    return module


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

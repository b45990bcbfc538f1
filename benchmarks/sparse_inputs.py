"""The Criteo columns over SparseTensor inputs (what ``tf.io.parse_example`` makes of a
VarLenFeature, the usual serving input), stock TF vs tf_blade, interleaved in one process; results
checked equal first. The same strings as dense [batch, 4] inputs through tf_blade give the gap
that is left between the two input forms. The same columns served from serialized tf.Examples
(a signature that parses them itself, as a model server feeds it) give the whole serving call,
and its ParseExampleV2 alone the share tf_blade leaves to TF.

    python -m benchmarks.sparse_inputs [--batches 1,64,512,4096] [--rounds 100] [--out docs/benchmarks/sparse_inputs]

The optimize time printed is whatever the caches held: run it in a fresh TF_BLADE_CACHE_DIR
for a cold compile.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import write_report


def _feature_layer(n_columns, dim):
    """A DenseFeatures layer of criteo_feature_model's columns (hashed, mean)."""
    import tensorflow as tf
    import tf_keras

    from tf_blade.examples import CRITEO_BUCKETS, column_names
    fc = tf.feature_column
    return tf_keras.layers.DenseFeatures([
        fc.embedding_column(fc.categorical_column_with_hash_bucket(n, CRITEO_BUCKETS[i % len(CRITEO_BUCKETS)]), dim)
        for i, n in enumerate(column_names(n_columns))])


def sparse_feature_model(n_columns=26, dim=16):
    """criteo_feature_model's columns (hashed, mean) over [batch, None] SparseTensor strings."""
    import tensorflow as tf

    from tf_blade.examples import column_names
    layer = _feature_layer(n_columns, dim)
    specs = {n: tf.SparseTensorSpec([None, None], tf.string) for n in column_names(n_columns)}
    return tf.function(lambda x: layer(x), input_signature=[specs])


def example_serving_model(n_columns=26, dim=16):
    """(serve, parse): ``sparse_feature_model``'s layer behind ``tf.io.parse_example`` of one
    VarLenFeature a column, taking a [batch] vector of serialized tf.Examples, and the parse
    alone, returning its component tensors (no Python packing of SparseTensors)."""
    import tensorflow as tf

    from tf_blade.examples import column_names
    layer = _feature_layer(n_columns, dim)
    features = {n: tf.io.VarLenFeature(tf.string) for n in column_names(n_columns)}
    spec = [tf.TensorSpec([None], tf.string, name="examples")]
    serve = tf.function(lambda s: layer(tf.io.parse_example(s, features)), input_signature=spec)
    parse = tf.function(lambda s: tf.nest.flatten(tf.io.parse_example(s, features), expand_composites=True),
                        input_signature=spec)
    return serve, parse


def serialized_examples(strings):
    """The rows of ``synthetic_batch`` strings as serialized tf.Examples, a column's "" padding left out."""
    import tensorflow as tf
    names = sorted(strings)
    rows = len(strings[names[0]])
    return tf.constant([tf.train.Example(features=tf.train.Features(feature={
        n: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v for v in strings[n][r] if v])) for n in names}))
        .SerializeToString() for r in range(rows)])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="1,64,512,4096")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "sparse_inputs"))
    args = p.parse_args(argv)
    import numpy as np
    import tensorflow as tf

    import tf_blade
    from tf_blade.examples import column_names, criteo_feature_model, signature_inputs, synthetic_batch
    from tf_blade.timing import interleaved

    sparse = sparse_feature_model()
    stock = sparse.get_concrete_function()
    start = time.perf_counter()
    fused = tf_blade.optimize(sparse, bridge="native").signatures["serving_default"]
    optimize_s = time.perf_counter() - start
    dense = tf_blade.optimize(criteo_feature_model().serve, bridge="native").signatures["serving_default"]
    serve, parse = example_serving_model()
    stock_serve = serve.get_concrete_function()
    fused_serve = tf_blade.optimize(serve, bridge="native").signatures["serving_default"]
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        strings = synthetic_batch(batch)
        x = {n: tf.sparse.from_dense(tf.constant(strings[n])) for n in column_names(26)}
        flat = tf.nest.flatten(x, expand_composites=True)
        dense_inputs = signature_inputs(strings)
        examples = serialized_examples(strings)
        same = bool(np.array_equal(stock(x).numpy(), fused(*flat).numpy())
                    and np.array_equal(stock_serve(examples).numpy(), fused_serve(examples).numpy()))
        # TF's own call with SparseTensors packs and checks them in Python; the flat call (the
        # component tensors, as the fused signature takes them) isolates the graphs' cost
        times = interleaved({"tf": lambda: stock(x),
                             "tf_flat": lambda: stock._call_flat(flat, stock.captured_inputs),
                             "tf_blade": lambda: fused(*flat), "dense": lambda: dense(**dense_inputs),
                             "tf_serve": lambda: stock_serve(examples), "tf_blade_serve": lambda: fused_serve(examples),
                             "parse": lambda: parse(examples)},
                            rounds=args.rounds)
        rows.append({"batch": batch, "identical": same, "tf_ms": times["tf"] * 1e3, "tf_flat_ms": times["tf_flat"] * 1e3,
                     "tf_blade_ms": times["tf_blade"] * 1e3, "dense_ms": times["dense"] * 1e3,
                     "speedup": times["tf"] / times["tf_blade"], "speedup_flat": times["tf_flat"] / times["tf_blade"],
                     "tf_serve_ms": times["tf_serve"] * 1e3, "tf_blade_serve_ms": times["tf_blade_serve"] * 1e3,
                     "parse_ms": times["parse"] * 1e3, "speedup_serve": times["tf_serve"] / times["tf_blade_serve"]})
        print(json.dumps(rows[-1]), flush=True)
    result = {"command": "python -m benchmarks.sparse_inputs " + " ".join(argv if argv is not None else sys.argv[1:]),
              "optimize_s": optimize_s, "rows": rows}
    lines = ["# Hashed columns over SparseTensor inputs", "",
             f"Command: `{result['command']}` (medians of {args.rounds} interleaved rounds; optimize() took "
             f"{optimize_s:.1f} s with the caches it found).", "",
             "criteo-fc's 26 hashed columns (mean, dim 16) over [batch, None] SparseTensors of the same strings "
             "(0-4 a row, ~5% empty rows). Stock TF is called twice: with the SparseTensors (its usual call, which "
             "packs and checks them in Python) and flat (their component tensors, as the fused signature takes "
             "them), which compares the graphs alone. *dense*: tf_blade on the same strings as [batch, 4] dense "
             "inputs (criteo-fc, one fused feature layer): what the sparse form still leaves on the table. "
             "*From tf.Examples*: the same columns behind `tf.io.parse_example` of serialized tf.Examples (one "
             "VarLenFeature a column), the signature a model server calls, stock TF and tf_blade (whose fused op "
             "takes the parse's outputs; ParseExampleV2 stays TF's), and the parse alone (returning its 78 "
             "component tensors, whose handling at small batches outweighs the parse itself).", "",
             "| batch | stock TF ms | stock TF flat call ms | tf_blade ms | tf_blade dense ms | speedup | "
             "speedup over the flat call | from tf.Examples: stock TF ms | tf_blade ms | speedup | parse alone ms "
             "| identical |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['tf_ms']:.3f} | {r['tf_flat_ms']:.3f} | {r['tf_blade_ms']:.3f} | "
              f"{r['dense_ms']:.3f} | {r['speedup']:.2f}x | {r['speedup_flat']:.2f}x | {r['tf_serve_ms']:.3f} | "
              f"{r['tf_blade_serve_ms']:.3f} | {r['speedup_serve']:.2f}x | {r['parse_ms']:.3f} | {r['identical']} |"
              for r in rows]
    write_report(args.out, result, lines)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Split string fields ("a|b|c" tags): stock TF vs tf_blade with the split fused vs tf_blade with
StringSplitV2, RaggedTensorToSparse and RaggedTensorToTensor left to TF (as before they had
lowerings), interleaved in one process; results checked identical first. Three patterns:

- tags: ``tf.strings.split`` -> hash -> ragged embedding lookup -> ``reduce_mean`` over the ragged axis;
- columns: 4 tags fields ``tf.strings.split(s).to_sparse()`` into hashed embedding columns of a
  DenseFeatures layer;
- padded: the tags padded or cut to 5 (``.to_tensor("", shape=[None, 5])``) -> hash -> embedding
  lookup -> mean over the non-empty slots.

    python -m benchmarks.string_split [--batches 1,64,512,4096] [--rounds 100] [--out docs/benchmarks/string_split]

The optimize times are whatever the caches held.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from . import write_report

LEFT_TO_TF = ["StringSplitV2", "RaggedTensorToSparse", "RaggedTensorToTensor"]


def _models():
    import tensorflow as tf
    import tf_keras

    rng = np.random.default_rng(0)
    table = tf.Variable(rng.standard_normal((10000, 16)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tags(s):
        ids = tf.strings.to_hash_bucket_fast(tf.strings.split(s, "|"), 10000)
        return tf.reduce_mean(tf.ragged.map_flat_values(tf.nn.embedding_lookup, table, ids), axis=1)

    columns = [tf.feature_column.embedding_column(tf.feature_column.categorical_column_with_hash_bucket(f"tags{i}", 10000), 16)
               for i in range(4)]
    layer = tf_keras.layers.DenseFeatures(columns)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 4)
    def split_columns(a, b, c, d):
        return layer({f"tags{i}": tf.strings.split(s, "|").to_sparse() for i, s in enumerate((a, b, c, d))})

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def padded(s):
        dense = tf.strings.split(s, "|").to_tensor("", shape=[None, 5])
        vectors = tf.nn.embedding_lookup(table, tf.strings.to_hash_bucket_fast(dense, 10000))
        mask = tf.cast(tf.not_equal(dense, ""), tf.float32)[..., None]
        return tf.reduce_sum(vectors * mask, 1) / tf.maximum(tf.reduce_sum(mask, 1), 1.0)
    return {"tags": (tags, 1), "columns": (split_columns, 4), "padded": (padded, 1)}


def _fields(rng, batch, n):
    import tensorflow as tf
    return [tf.constant(["|".join(f"t{v}" for v in rng.zipf(1.3, rng.integers(0, 6))) for _ in range(batch)], tf.string)
            for _ in range(n)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="1,64,512,4096")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "string_split"))
    args = p.parse_args(argv)
    import time

    import tf_blade
    from tf_blade.timing import interleaved

    rng = np.random.default_rng(1)
    rows, optimize_s = [], {}
    for name, (stock, n_inputs) in _models().items():
        start = time.perf_counter()
        fused = tf_blade.optimize(stock, bridge="native").signatures["serving_default"]
        optimize_s[name] = time.perf_counter() - start
        before = tf_blade.optimize(stock, bridge="native", deny_ops=LEFT_TO_TF).signatures["serving_default"]
        for batch in (int(b) for b in args.batches.split(",")):
            xs = _fields(rng, batch, n_inputs)
            kw = dict(zip("abcd" if n_inputs > 1 else ["s"], xs))  # the functions' argument names
            want = stock(*xs).numpy()
            same = all(np.array_equal(f(**kw).numpy(), want, equal_nan=True) for f in (fused, before))
            t = interleaved({"tf": lambda: stock(*xs), "split_in_tf": lambda: before(**kw), "tf_blade": lambda: fused(**kw)},
                            rounds=args.rounds)
            rows.append({"model": name, "batch": batch, "identical": same, "tf_ms": t["tf"] * 1e3,
                         "split_in_tf_ms": t["split_in_tf"] * 1e3, "tf_blade_ms": t["tf_blade"] * 1e3,
                         "speedup": t["tf"] / t["tf_blade"], "speedup_split_in_tf": t["tf"] / t["split_in_tf"]})
            print(json.dumps(rows[-1]), flush=True)
    result = {"command": "python -m benchmarks.string_split " + " ".join(argv if argv is not None else sys.argv[1:]),
              "optimize_s": optimize_s, "rows": rows}
    lines = ["# Split string fields (tags \"a|b|c\")", "",
             f"Command: `{result['command']}` (medians of {args.rounds} interleaved rounds; optimize() "
             + ", ".join(f"{k} {v:.1f} s" for k, v in optimize_s.items()) + " with the caches it found).", "",
             "tags: split -> hash -> ragged embedding lookup -> mean; columns: 4 fields split, `.to_sparse()`, "
             "into hashed embedding columns of a DenseFeatures layer; padded: split, `.to_tensor(\"\", shape=[None, 5])`, "
             "hash, embedding lookup, mean over the non-empty slots. \"split left to TF\" is tf_blade with "
             "StringSplitV2, RaggedTensorToSparse and RaggedTensorToTensor denied (as before their lowerings).", "",
             "| model | batch | stock TF ms | tf_blade, split left to TF ms | tf_blade ms | speedup (split left to TF) | speedup | identical |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['batch']} | {r['tf_ms']:.3f} | {r['split_in_tf_ms']:.3f} | {r['tf_blade_ms']:.3f} | "
              f"{r['speedup_split_in_tf']:.2f}x | {r['speedup']:.2f}x | {r['identical']} |" for r in rows]
    write_report(args.out, result, lines)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Vocabulary, integer, weighted and bucketized embedding columns: stock TF vs tf_blade, interleaved in one
process, results checked identical first. One DenseFeatures layer of 8 vocabulary-list columns (20
to 5000 words, half with an OOV bucket, half dropping unknown words; [batch, 3] strings, ~10%
unknown, ~20% padding ""), 6 integer columns over [batch, 3] int64 or int32 ids (~20% padding -1):
2 identity (one with a default value), 2 integer vocabulary lists, 2 hashed, 3 weighted columns
([batch, 5] hashed strings, mean; [batch, 5] identity ids, sum; [batch, 5] hashed strings, sqrtn;
~30% absent) and 8 bucketized numeric columns (1 or 2 values, 4 to 32 boundaries), all embedded
(dim 8, mean unless said): a census-style model, fused into _BladeVocabularyBag, _BladeIntBag,
_BladeWeightedStringBag, _BladeWeightedIntBag and _BladeBucketBag ops.

    python -m benchmarks.vocabulary_columns [--batches 1,64,512,4096] [--rounds 100] [--out docs/benchmarks/vocabulary_columns]

The optimize time is whatever the caches held.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from . import write_report

VOCAB_SIZES = [20, 50, 100, 200, 500, 1000, 3000, 5000]
INT_SIZES = [100, 10000, 50, 1000, 1000, 100000]  # identity, identity, int vocabularies, hashed
INT32_COLUMNS = (0, 3)  # of those, over int32 ids (the others int64)
WEIGHTED_SIZES = [10000, 1000, 5000]  # hashed strings (mean), identity (sum), hashed strings (sqrtn)


def _model():
    import tensorflow as tf
    import tf_keras

    fc = tf.feature_column
    rng = np.random.default_rng(0)
    columns, specs = [], {}
    for i, size in enumerate(VOCAB_SIZES):
        words = [f"v{i}_{k}" for k in range(size)]
        column = fc.categorical_column_with_vocabulary_list(f"v{i}", words, num_oov_buckets=i % 2)
        columns.append(fc.embedding_column(column, 8))
        specs[f"v{i}"] = tf.TensorSpec([None, 3], tf.string)
    for i, size in enumerate(INT_SIZES):
        name = f"i{i}"
        dtype = tf.int32 if i in INT32_COLUMNS else tf.int64
        if i < 2:  # the second with a default for ids outside its buckets
            column = fc.categorical_column_with_identity(name, size, default_value=0 if i == 1 else None)
        elif i < 4:
            column = fc.categorical_column_with_vocabulary_list(name, list(range(0, 2 * size, 2)), dtype=dtype)
        else:
            column = fc.categorical_column_with_hash_bucket(name, size, dtype=dtype)
        columns.append(fc.embedding_column(column, 8))
        specs[name] = tf.TensorSpec([None, 3], dtype)
    for i, size in enumerate(WEIGHTED_SIZES):  # weighted: hashed strings (mean, sqrtn), identity ids (sum)
        ids = fc.categorical_column_with_identity(f"w{i}", size) if i == 1 else \
            fc.categorical_column_with_hash_bucket(f"w{i}", size)
        columns.append(fc.embedding_column(fc.weighted_categorical_column(ids, f"w{i}_weight"), 8,
                                           combiner=("mean", "sum", "sqrtn")[i]))
        specs[f"w{i}"] = tf.TensorSpec([None, 5], tf.int64 if i == 1 else tf.string)
        specs[f"w{i}_weight"] = tf.TensorSpec([None, 5], tf.float32)
    for i in range(8):
        width = 1 + i % 2
        boundaries = sorted(rng.standard_normal(4 * (1 + i % 8)).tolist())
        columns.append(fc.embedding_column(fc.bucketized_column(fc.numeric_column(f"b{i}", shape=(width,)),
                                                                boundaries), 8))
        specs[f"b{i}"] = tf.TensorSpec([None, width], tf.float32)
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    names = sorted(specs)
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[{n: specs[n] for n in names}])
    module.serve.get_concrete_function()
    return module, specs


def _batch(rng, batch, specs):
    import tensorflow as tf
    out = {}
    for name, spec in specs.items():
        if name[0] == "v":
            i = int(name[1:])
            ids = rng.zipf(1.3, (batch, 3)) % VOCAB_SIZES[i]
            words = np.char.add(f"v{i}_", ids.astype(str)).astype(object)
            words[rng.random((batch, 3)) < 0.1] = b"unknown"
            words[rng.random((batch, 3)) < 0.2] = b""
            out[name] = tf.constant(words.astype(bytes) if batch else np.zeros((0, 3), bytes))
        elif name[0] == "w" and not name.endswith("_weight"):  # ids and their weights, ~30% absent
            present = rng.random((batch, 5)) < 0.7
            ids = rng.zipf(1.3, (batch, 5)) % WEIGHTED_SIZES[int(name[1:])]
            out[name] = tf.constant(np.where(present, np.char.add("t", ids.astype(str)), "").astype(bytes)
                                    if spec.dtype == tf.string else np.where(present, ids, -1))
            out[name + "_weight"] = tf.constant(np.where(present, rng.random((batch, 5)) + 0.1, 0).astype(np.float32))
        elif name.endswith("_weight"):
            continue
        elif name[0] == "i":
            i = int(name[1:])
            ids = rng.zipf(1.3, (batch, 3)) % (INT_SIZES[i] * (11 if i == 1 else 10) // 10)  # i1: ~9% its default's
            ids[rng.random((batch, 3)) < 0.2] = -1
            out[name] = tf.constant(ids.astype(spec.dtype.as_numpy_dtype))
        else:
            out[name] = tf.constant(rng.standard_normal((batch, spec.shape[1])).astype(np.float32))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="1,64,512,4096")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "vocabulary_columns"))
    args = p.parse_args(argv)
    import time

    import tf_blade
    from tf_blade.timing import interleaved

    module, specs = _model()
    start = time.perf_counter()
    fused = tf_blade.optimize(module).signatures["serve"]
    optimize_s = time.perf_counter() - start
    rng = np.random.default_rng(1)
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        x = _batch(rng, batch, specs)
        kw = {"x_" + k: v for k, v in x.items()}  # the signature's argument names
        same = bool(np.array_equal(module.serve(x).numpy(), fused(**kw).numpy()))
        t = interleaved({"tf": lambda: module.serve(x), "tf_blade": lambda: fused(**kw)}, rounds=args.rounds)
        rows.append({"batch": batch, "identical": same, "tf_ms": t["tf"] * 1e3, "tf_blade_ms": t["tf_blade"] * 1e3,
                     "speedup": t["tf"] / t["tf_blade"]})
        print(rows[-1], flush=True)
    given = argv if argv is not None else sys.argv[1:]
    result = {"command": "python -m benchmarks.vocabulary_columns " + " ".join(given), "optimize_s": optimize_s,
              "rows": rows}
    lines = ["# Vocabulary, integer, weighted and bucketized embedding columns", "",
             f"Command: `{result['command']}` (medians of {args.rounds} interleaved rounds; optimize() "
             f"{optimize_s:.1f} s with the caches it found).", "",
             "One DenseFeatures layer: 8 vocabulary-list columns (" + ", ".join(map(str, VOCAB_SIZES))
             + " words; odd ones with 1 OOV bucket, even ones dropping unknown words) over [batch, 3] strings "
             "(Zipf-drawn words, ~10% unknown, ~20% padding), 6 integer columns over [batch, 3] int64 or int32 ids "
             "(Zipf-drawn, ~20% padding -1): identity (" + ", ".join(map(str, INT_SIZES[:2])) + " buckets, the "
             "second with a default for ~9% of its ids), "
             "integer vocabulary lists (" + ", ".join(map(str, INT_SIZES[2:4])) + " values), hashed ("
             + ", ".join(map(str, INT_SIZES[4:])) + " buckets); the first identity and the second vocabulary over "
             "int32, 3 weighted columns over [batch, 5] ids with weights (~30% absent): hashed strings ("
             + str(WEIGHTED_SIZES[0]) + " buckets, mean), identity (" + str(WEIGHTED_SIZES[1]) + " buckets, sum) "
             "and hashed strings (" + str(WEIGHTED_SIZES[2]) + " buckets, sqrtn); "
             "and 8 bucketized numeric columns of 1 or 2 "
             "values (4 to 32 boundaries), each embedded (dim 8, mean unless said).", "",
             "| batch | stock TF ms | tf_blade ms | speedup | identical |", "|---|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['tf_ms']:.3f} | {r['tf_blade_ms']:.3f} | {r['speedup']:.2f}x | {r['identical']} |"
              for r in rows]
    write_report(args.out, result, lines)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The main job: optimize the bundled example recommendation model and print what it gained.

    python -m tf_blade.demo [--columns 26] [--batch 512] [--out DIR]

Builds a Criteo-like feature-column model from synthetic data, saves it as a SavedModel,
optimizes that SavedModel with tf_blade into an optimized SavedModel, checks the results are
identical and times stock TF against tf_blade in the same process, interleaved.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import tensorflow as tf

import tf_blade
from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
from tf_blade.timing import interleaved


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tf-blade demo", description=__doc__.split("\n")[0])
    parser.add_argument("--columns", type=int, default=26)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--out", default=None, help="where to write the SavedModels")
    args = parser.parse_args(argv)
    work = args.out or tempfile.mkdtemp(prefix="tf_blade_demo_")
    original_dir = os.path.join(work, "original")
    optimized_dir = os.path.join(work, "optimized")

    model = criteo_feature_model(args.columns)
    tf.saved_model.save(model, original_dir, signatures={"serving_default": model.serve})
    start = time.perf_counter()
    optimized = tf_blade.optimize(original_dir, optimized_dir)
    rewrite_s = time.perf_counter() - start
    print(optimized.report)

    stock = tf.saved_model.load(original_dir).signatures["serving_default"]
    fast = optimized.signatures["serving_default"]
    batch = synthetic_batch(args.batch, args.columns)
    inputs = {name: tf.constant(batch[name]) for name in column_names(args.columns)}
    start = time.perf_counter()
    got = fast(**inputs)["features"].numpy()
    first_call_s = time.perf_counter() - start
    want = stock(**inputs)["features"].numpy()
    identical = np.array_equal(want, got)
    times = interleaved({"tf": lambda: stock(**inputs), "tf_blade": lambda: fast(**inputs)},
                        rounds=args.rounds)
    print(f"\nmodel: {args.columns} hashed string columns -> embedding dim 16 (mean), batch {args.batch}")
    print(f"results identical to TensorFlow: {identical}")
    print(f"optimize (rewrite + kernel compile or cache load) {rewrite_s:.2f} s, first call {first_call_s:.2f} s")
    print(f"stock TF  median {times['tf'] * 1e3:8.3f} ms per call")
    print(f"tf_blade  median {times['tf_blade'] * 1e3:8.3f} ms per call")
    print(f"speedup   {times['tf'] / times['tf_blade']:.2f}x   (optimized SavedModel: {optimized_dir})")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

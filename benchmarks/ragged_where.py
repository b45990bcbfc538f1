"""A ragged tf.where: Keras ``Hashing(mask_value="")`` on a RaggedTensor of strings, stock TF vs
tf_blade (one fused op), interleaved in one process; results checked equal first.

    python -m benchmarks.ragged_where [--batches 0,1,64,512,4096] [--rounds 200] [--out docs/benchmarks/ragged_where]

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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="0,1,64,512,4096")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "ragged_where"))
    args = p.parse_args(argv)
    import numpy as np
    import tensorflow as tf
    import tf_keras

    import tf_blade
    from tf_blade.timing import interleaved

    hashing = tf_keras.layers.Hashing(num_bins=1000, mask_value="")
    f = tf.function(lambda r: {"ids": hashing(r).flat_values},
                    input_signature=[tf.RaggedTensorSpec([None, None], tf.string, 1, tf.int64)])
    stock = f.get_concrete_function()
    start = time.perf_counter()
    opt = tf_blade.optimize(f, bridge="native")
    optimize_s = time.perf_counter() - start
    fused = opt.signatures["serving_default"]
    rng = np.random.default_rng(0)
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        lengths = rng.integers(0, 5, size=batch)  # "" (the mask) about one id in five
        values = np.where(rng.random(int(lengths.sum())) < 0.2, "", np.char.add("id_", rng.zipf(1.3, int(lengths.sum())).astype(str)))
        r = tf.RaggedTensor.from_row_lengths(tf.constant(values.astype(object).astype(bytes), tf.string),
                                             tf.constant(lengths, tf.int64))
        flat = tf.nest.flatten(r, expand_composites=True)
        same = bool(np.array_equal(stock(r)["ids"].numpy(), fused(*flat)["ids"].numpy()))
        # TF's own call with a RaggedTensor packs and checks it in Python; the flat call (the
        # component tensors, as the fused signature takes them) isolates the graphs' cost
        times = interleaved({"tf": lambda: stock(r), "tf_flat": lambda: stock._call_flat(flat, stock.captured_inputs),
                             "tf_blade": lambda: fused(*flat)}, rounds=args.rounds)
        rows.append({"batch": batch, "identical": same, "tf_ms": times["tf"] * 1e3, "tf_flat_ms": times["tf_flat"] * 1e3,
                     "tf_blade_ms": times["tf_blade"] * 1e3, "speedup": times["tf"] / times["tf_blade"],
                     "speedup_flat": times["tf_flat"] / times["tf_blade"]})
        print(json.dumps(rows[-1]), flush=True)
    result = {"command": "python -m benchmarks.ragged_where " + " ".join(argv if argv is not None else sys.argv[1:]),
              "fused_ops": opt.report.fused_ops, "optimize_s": optimize_s, "rows": rows}
    lines = ["# Ragged tf.where (Keras Hashing(mask_value=\"\") on a RaggedTensor)", "",
             f"Command: `{result['command']}` (medians of {args.rounds} interleaved rounds). "
             f"Fused ops: {result['fused_ops']}; optimize() took {optimize_s:.1f} s with the caches it found.", "",
             "Stock TF is called twice: with the RaggedTensor (its usual call, which packs and checks it "
             "in Python) and flat (its component tensors, as the fused signature takes them), which "
             "compares the graphs alone.", "",
             "| batch | stock TF ms | stock TF flat call ms | tf_blade ms | speedup | speedup over the flat call | identical |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['tf_ms']:.3f} | {r['tf_flat_ms']:.3f} | {r['tf_blade_ms']:.3f} | {r['speedup']:.2f}x | "
              f"{r['speedup_flat']:.2f}x | {r['identical']} |" for r in rows]
    write_report(args.out, result, lines)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

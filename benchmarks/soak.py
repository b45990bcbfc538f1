"""Soak run (issue 6): many threads, many calls, RSS over time, optimize/unload cycles.

    python -m benchmarks.soak [--threads 8] [--calls 500] [--rss-calls 100000] [--cycles 50]
                              [--out docs/benchmarks/soak]

1. ``threads`` threads call one optimized model ``calls`` times each; every result must be
   bit-identical to the single-threaded one (and to stock TF).
2. One caller makes ``rss-calls`` calls; RSS is sampled every tenth of the way. A leak in the
   bridge shows as growth between the second sample and the last.
3. The optimized SavedModel is loaded, called and dropped ``cycles`` times (a server reloading a
   model); RSS after each cycle.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--rss-calls", type=int, default=100_000)
    p.add_argument("--cycles", type=int, default=50)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "soak"))
    args = p.parse_args(argv)
    import numpy as np
    import tensorflow as tf
    import tf_blade
    from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
    from tf_blade.timing import rss_mb

    model = criteo_feature_model(3, dim=4)
    fn = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
    feeds = []
    for seed in range(args.threads):
        raw = synthetic_batch(17 + 13 * seed, 3, seed=seed)
        feed = [tf.constant(raw[c]) for c in column_names(3)]
        want = model.serve(*feed)["features"].numpy()
        assert np.array_equal(fn(*feed)["features"].numpy(), want)
        feeds.append((feed, want))

    def worker(i):
        feed, want = feeds[i]
        return sum(not np.array_equal(fn(*feed)["features"].numpy(), want) for _ in range(args.calls))

    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        mismatches = sum(pool.map(worker, range(args.threads)))

    feed = feeds[0][0]
    samples = []
    step = max(args.rss_calls // 10, 1)
    for i in range(args.rss_calls):
        fn(*feed)
        if (i + 1) % step == 0:
            samples.append(round(rss_mb(), 1))

    import tempfile
    saved = tempfile.mkdtemp(prefix="tf_blade_soak_")
    tf_blade.optimize(model.serve, saved)
    cycle_rss = []
    for _ in range(args.cycles):
        loaded = tf.saved_model.load(saved)
        out = loaded.signatures["serving_default"](**{c: t for c, t in zip(column_names(3), feed)})
        assert np.array_equal(out["features"].numpy(), feeds[0][1])
        del loaded, out
        gc.collect()
        cycle_rss.append(round(rss_mb(), 1))

    result = {"command": "python -m benchmarks.soak " + " ".join(argv if argv is not None else sys.argv[1:]),
              "threads": args.threads, "calls_per_thread": args.calls, "mismatches": int(mismatches),
              "rss_calls": args.rss_calls, "rss_mb_every_tenth": samples,
              "rss_growth_mb_after_first_fifth": samples[-1] - samples[1] if len(samples) > 1 else 0.0,
              "cycles": args.cycles, "rss_mb_per_cycle": cycle_rss}
    shown = sorted({c for c in (1, 10, 25, args.cycles) if 1 <= c <= len(cycle_rss)})
    text = "\n".join([
        "# Soak run", "", f"Command: `{result['command']}`", "",
        f"- {args.threads} threads x {args.calls} calls: {mismatches} results differing from the single-threaded ones.",
        f"- {args.rss_calls} calls, RSS (MB) every tenth: {samples}; growth after the first fifth: "
        f"{result['rss_growth_mb_after_first_fifth']:.1f} MB.",
        f"- {args.cycles} load/call/drop cycles of the optimized SavedModel, RSS (MB) after cycles "
        f"{', '.join(str(c) for c in shown)}: {[cycle_rss[c - 1] for c in shown]}.", ""])
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=2)
    with open(args.out + ".md", "w") as f:
        f.write(text)
    print(text)
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

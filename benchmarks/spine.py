"""Figures for the spine (issue 2): bridge overhead, compile time cold/warm, speedups.

    python -m benchmarks.spine [--batch 512] [--rounds 100] [--out docs/benchmarks/spine]

Everything is timed against stock TensorFlow in the same process, interleaved (every side once a
round, in a fresh random order); medians and ratios are reported (absolute times on a shared
machine drift, ratios hold). Compile times come from fresh child processes with empty (cold) or
filled (warm) caches.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import child_json

_CHILD = r"""
import os, sys, time, json
import tensorflow as tf
from numba.core import event

compiles = event.RecordingListener()  # every function Numba compiles (nested ones too)
event.register("numba:compile", compiles)
t0 = time.perf_counter()
import tf_blade  # kernels with explicit signatures compile (or load) here
import_s = time.perf_counter() - t0
from tf_blade import examples as ex
from tf_blade.runtime import compiler
n, wdl = int(sys.argv[1]), sys.argv[2] == "wdl"  # criteo-fc, or wide & deep with 13 numeric columns
m = ex.criteo_wdl_model(n, 13) if wdl else ex.criteo_feature_model(n)
names = ex.column_names(n) + (ex.numeric_names(13) if wdl else [])
batch = lambda b: {**ex.synthetic_batch(b, n), **(ex.synthetic_numeric(b, 13) if wdl else {})}
t0 = time.perf_counter()
opt = tf_blade.optimize(m.serve, bridge="native")
rewrite = time.perf_counter() - t0
x = batch(64)
args = [tf.constant(x[c]) for c in names]
t0 = time.perf_counter()
opt.signatures["serving_default"](*args)
first = time.perf_counter() - t0
before = compiler.compile_count
for b in (0, 1, 7, 512, 4096):
    xb = batch(b)
    opt.signatures["serving_default"](*[tf.constant(xb[c]) for c in names])
print(json.dumps({"import_s": import_s, "rewrite_s": rewrite, "first_call_s": first, "numba_compiles": sum(ev.is_start for _, ev in compiles.buffer),
                  "recompiles_across_batches": compiler.compile_count - before}))
"""


def compile_times(columns: int, wide_and_deep: bool = False):
    """First-call time with empty caches (cold), then with the caches it left (warm), then as a new
    model on a machine whose kernel library is compiled (new_model): the generated modules are
    deleted, so the model's own code compiles again while the library loads from Numba's cache.
    ``wide_and_deep``: then also wide & deep as a new model on that library (new_wdl)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TF_BLADE_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(cache, "numba"),
                   TF_CPP_MIN_LOG_LEVEL="3")
        # builds the native op's .so; its Numba cache is thrown away, so the cold run's import
        # compiles the kernels that have explicit signatures
        subprocess.run([sys.executable, "-c", "import tf_blade"], check=True,
                       env=dict(env, NUMBA_CACHE_DIR=os.path.join(cache, "prebuild-numba")))
        runs = {}
        for kind in ("cold", "warm", "new_model") + (("new_wdl",) if wide_and_deep else ()):
            if kind.startswith("new_"):
                _forget_generated_code(cache)
            model = "wdl" if kind == "new_wdl" else "fc"
            runs[kind] = child_json(["-c", _CHILD, str(columns), model], env)
            if kind.startswith("new_") and not runs[kind]["numba_compiles"]:
                raise RuntimeError(f"the {kind} run compiled nothing: its figure would be a warm one")
    return runs


def _forget_generated_code(cache: str) -> None:
    """Deletes the generated modules and their Numba cache, keeping the kernel library's. Numba
    stamps a cached function with its file's contents, so deleting only the sources (identical
    when regenerated) left their machine code valid: the "new model" row measured a warm start.
    Numba keeps a folder's caches under NUMBA_CACHE_DIR in "<folder name>_<hash of its path>":
    the generated modules' folder is named "numba-<version>-<code version>", the library's
    "kernels"."""
    shutil.rmtree(os.path.join(cache, "kernels"))
    numba_dir = os.path.join(cache, "numba")
    for name in os.listdir(numba_dir):
        if name.startswith("numba-"):
            shutil.rmtree(os.path.join(numba_dir, name))


def speedups(columns: int, batch: int, rounds: int):
    import tensorflow as tf

    import tf_blade
    from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
    from tf_blade.timing import interleaved

    model = criteo_feature_model(columns)
    stock = model.serve.get_concrete_function()
    native = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
    numpy = tf_blade.optimize(model.serve, bridge="numpy").signatures["serving_default"]
    x = synthetic_batch(batch, columns)
    args = [tf.constant(x[c]) for c in column_names(columns)]
    floor = tf.function(lambda *a: a[0][:1, :1], input_signature=[tf.TensorSpec([None, None], tf.string)] * columns)
    floor = floor.get_concrete_function()
    # numpy_function runs apart: its ReadVariableOp copies every table per call (the variables are
    # in copy-on-read mode) and would evict the tables the other two read.
    times = interleaved({"tf": lambda: stock(*args), "native": lambda: native(*args),
                         "call_floor": lambda: floor(*args)}, rounds=rounds)
    pair = interleaved({"tf": lambda: stock(*args), "numpy": lambda: numpy(*args)}, rounds=max(rounds // 4, 5))
    times["numpy"] = pair["numpy"] * times["tf"] / pair["tf"]  # scaled to this run's TF median
    times = {k: v * 1e3 for k, v in times.items()}
    return {"columns": columns, "batch": batch, "median_ms": times,
            "speedup_native": times["tf"] / times["native"], "speedup_numpy": times["tf"] / times["numpy"]}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "spine"))
    p.add_argument("--skip-compile", action="store_true", help="keep the compile figures of --out.json")
    args = p.parse_args(argv)
    if args.skip_compile:
        with open(args.out + ".json") as f:
            compile_figures = {int(k): v for k, v in json.load(f)["compile"].items()}
    else:
        compile_figures = {c: compile_times(c) for c in (1, 26)}
    result = {"command": "python -m benchmarks.spine " + " ".join(argv or sys.argv[1:]),
              "speed": [speedups(c, args.batch, args.rounds) for c in (1, 26)],
              "speed_batch1": [speedups(c, 1, args.rounds) for c in (1, 26)],
              "compile": compile_figures}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=2)
    lines = [f"# Spine benchmark\n\nCommand: `{result['command']}` (medians of {args.rounds} interleaved rounds)\n",
             "| columns | batch | stock TF ms | native ms | numpy_function ms | call floor ms | native speedup | numpy speedup |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["speed"] + result["speed_batch1"]:
        t = r["median_ms"]
        lines.append(f"| {r['columns']} | {r['batch']} | {t['tf']:.3f} | {t['native']:.3f} | {t['numpy']:.3f} | "
                     f"{t['call_floor']:.3f} | {r['speedup_native']:.2f}x | {r['speedup_numpy']:.2f}x |")
    lines += ["", "| columns | cold first call s | warm first call s | recompiles across batch 0..4096 |", "|---|---|---|---|"]
    for c, r in result["compile"].items():
        lines.append(f"| {c} | {r['cold']['first_call_s']:.2f} | {r['warm']['first_call_s']:.2f} | "
                     f"{r['warm']['recompiles_across_batches']} |")
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""GPU timing of the CUDA embedding bag (kernels/cuda_embedding_bag.py) against torch's.

    python benchmarks/cuda_bags.py [--batches 1024,16384,131072] [--dims 16,64] [--out FILE.json]

Runs on a GPU machine without TensorFlow (it imports the kernel library alone). The 26 Criteo
tables (tf_blade/examples.py's bucket counts), 0-4 ids a row (~5% empty rows), mean pooling:
  ours   one launch for all 26 columns, written into the concatenated output
  torch  torch.nn.functional.embedding_bag, one call per table, then torch.cat
Both take device-resident tables, ids and offsets; medians of CUDA-event timings ("ours" is the
API call, which reads back the error flag; "kernel" the launch alone). Also checks our bits
against the CPU kernel (reduce_runs, bit-exact with TF), torch's closeness (it sums in its own
order), and the bytes of table rows the bags read over the kernel's time.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import sys
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _kernel_library():
    """tf_blade.kernels without running tf_blade/__init__.py (which loads TensorFlow)."""
    if "tf_blade" not in sys.modules:
        package = types.ModuleType("tf_blade")
        package.__path__ = [os.path.join(ROOT, "tf_blade")]
        sys.modules["tf_blade"] = package
    spec = importlib.util.spec_from_file_location("tf_blade.kernels", os.path.join(ROOT, "kernels", "__init__.py"),
                                                  submodule_search_locations=[os.path.join(ROOT, "kernels")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tf_blade.kernels"] = module
    spec.loader.exec_module(module)
    import tf_blade.kernels.cuda_embedding_bag as bags
    return bags


def _criteo_buckets():
    """CRITEO_BUCKETS from tf_blade/examples.py, read without importing it (it imports TF)."""
    with open(os.path.join(ROOT, "tf_blade", "examples.py")) as f:
        for node in ast.parse(f.read()).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CRITEO_BUCKETS":
                return ast.literal_eval(node.value)
    raise LookupError("CRITEO_BUCKETS not found in tf_blade/examples.py")


def _median_ms(fn, reps=50):
    import torch
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def measure(batch, dim, bags, rng):
    import torch
    from numba import cuda
    tables = [rng.standard_normal((n, dim)).astype(np.float32) for n in _criteo_buckets()]
    ids, counts = [], []
    for t in tables:
        c = rng.integers(0, 5, batch)
        c[rng.random(batch) < 0.05] = 0
        counts.append(c)
        ids.append(rng.integers(0, t.shape[0], int(c.sum())))
    flat = np.concatenate(ids).astype(np.int64)
    splits, at = [], 0
    for i, c in zip(ids, counts):
        splits.append(at + np.concatenate([[0], np.cumsum(c)]))
        at += len(i)
    stacked = bags.stack_tables(tables)
    d_ids, d_splits = cuda.to_device(flat), cuda.to_device(np.array(splits, np.int64))
    # Both launch on the legacy default stream, so torch's events time numba's kernels too.

    out = cuda.device_array((batch, len(tables) * dim), np.float32)

    def ours():  # the API: launch, then read back the error flag (a sync and an 8-byte copy)
        return bags.embedding_bags(stacked, d_ids, d_splits, 1, batch, out)[0]
    threads = out.size

    def kernel_only():
        bags._bags[(threads + bags.THREADS - 1) // bags.THREADS, bags.THREADS](
            stacked.table, stacked.d_starts, stacked.d_rows, d_ids, d_splits, 1, out, stacked.first_bad)
    t_tables = [torch.from_numpy(t).cuda() for t in tables]
    t_args = [(torch.from_numpy(i).cuda(), torch.from_numpy(np.concatenate([[0], np.cumsum(c)[:-1]])).cuda())
              for i, c in zip(ids, counts)]

    def theirs():
        return torch.cat([torch.nn.functional.embedding_bag(i, t, o, mode="mean") for t, (i, o) in zip(t_tables, t_args)], 1)
    got, want = ours().copy_to_host(), theirs().cpu().numpy()
    from tf_blade.kernels.sparse_segment_reduction import reduce_runs  # the CPU kernel, bit-exact with TF
    cpu = np.zeros_like(got)
    for k, (t, i, c) in enumerate(zip(tables, ids, counts)):
        part = np.zeros((batch, dim), np.float32)
        reduce_runs(t, i.astype(np.int64), np.concatenate([[0], np.cumsum(c)]), np.arange(batch), 1, part)
        cpu[:, k * dim:(k + 1) * dim] = part
    rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30))) if got.size else 0.0
    ms_ours, ms_kernel, ms_torch = _median_ms(ours), _median_ms(kernel_only), _median_ms(theirs)
    row_bytes = int(flat.size) * dim * 4
    return {"batch": batch, "dim": dim, "lookups": int(flat.size), "ours_ms": ms_ours, "kernel_ms": ms_kernel,
            "torch_ms": ms_torch, "speedup_vs_torch": ms_torch / ms_ours,
            "kernel_row_GBps": row_bytes / ms_kernel / 1e6, "max_rel_diff_vs_torch": rel,
            "bit_exact_vs_cpu_kernel": bool(np.array_equal(got.view(np.uint32), cpu.view(np.uint32)))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="1024,16384,131072")
    p.add_argument("--dims", default="16,64")
    p.add_argument("--out")
    args = p.parse_args(argv)
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still names it; NumPy 2.5 dropped it
        np.row_stack = np.vstack
    bags = _kernel_library()
    rng = np.random.default_rng(0)
    rows = []
    for dim in map(int, args.dims.split(",")):
        for batch in map(int, args.batches.split(",")):
            rows.append(measure(batch, dim, bags, rng))
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()

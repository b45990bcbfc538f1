"""GPU timing of the CUDA embedding bag (kernels/cuda_embedding_bag.py) against torch's.

    python benchmarks/cuda_bags.py [--batches 1024,16384,131072] [--dims 16,64]
                                   [--string-batches 1024,16384] [--out docs/benchmarks/cuda_bags]

Runs on a GPU machine without TensorFlow (it imports the kernel library alone). The 26 Criteo
tables (tf_blade/examples.py's bucket counts), 0-4 ids a row (~5% empty rows), mean pooling:
  ours   one launch for all 26 columns, written into the concatenated output
  torch  torch.nn.functional.embedding_bag, one call per table, then torch.cat
Then the whole hash-bucket column on the GPU (strings in, pooled embeddings out), whose bits
are checked against the CPU string bag. Both take device-resident tables, ids and offsets; medians of CUDA-event timings ("ours" is the
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
    stacked = bags.StackedTables(tables)
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
        reduce_runs(t, i.astype(np.int64), np.concatenate([[0], np.cumsum(c)]), np.arange(batch), 1, part, 0)
        cpu[:, k * dim:(k + 1) * dim] = part
    rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30))) if got.size else 0.0
    ms_ours, ms_kernel, ms_torch = _median_ms(ours), _median_ms(kernel_only), _median_ms(theirs)
    row_bytes = int(flat.size) * dim * 4
    return {"batch": batch, "dim": dim, "lookups": int(flat.size), "ours_ms": ms_ours, "kernel_ms": ms_kernel,
            "torch_ms": ms_torch, "speedup_vs_torch": ms_torch / ms_ours,
            "kernel_row_GBps": row_bytes / ms_kernel / 1e6, "max_rel_diff_vs_torch": rel,
            "bit_exact_vs_cpu_kernel": bool(np.array_equal(got.view(np.uint32), cpu.view(np.uint32)))}


def measure_strings(batch, dim, bags, rng):
    """The whole hash-bucket column on the GPU (kernels/cuda_string_bag.py): [batch, 4] strings a
    column ("" padding, ~5% empty rows) hashed and pooled; the byte pool's upload timed apart."""
    from numba import cuda
    import tf_blade.kernels.cuda_string_bag as strings_gpu
    from tf_blade.kernels.errors import new_error_buffer
    from tf_blade.kernels.string_bag import string_bag
    buckets = _criteo_buckets()
    tables = [rng.standard_normal((n, dim)).astype(np.float32) for n in buckets]
    columns = []
    for col in range(len(buckets)):
        counts = rng.integers(1, 5, batch)
        counts[rng.random(batch) < 0.05] = 0
        values = np.char.add(f"C{col}_", (rng.zipf(1.3, (batch, 4)) % 1_000_000).astype(str)).astype("S")
        values[np.arange(4)[None, :] >= counts[:, None]] = b""
        columns.append(values.astype(object))
    data, offsets, starts, slots = strings_gpu.pack_strings(columns)
    stacked = bags.StackedTables(tables)
    d_pool = [cuda.to_device(a) for a in (data, offsets, starts, slots)]
    d_buckets = cuda.to_device(np.array(buckets, np.int64))
    out = cuda.device_array((batch, len(tables) * dim), np.float32)

    def gpu():
        return strings_gpu.string_bags(stacked, *d_pool, d_buckets, 1, batch, out)[0]
    got = gpu().copy_to_host()
    err, cpu = new_error_buffer(), []
    for col, (table, n) in enumerate(zip(tables, buckets)):
        ids = np.arange(starts[col], starts[col] + batch * 4, dtype=np.int64).reshape(batch, 4)
        cpu.append(string_bag(ids, offsets, data, np.array([batch, 4], np.int64), table, n, 1, err))
    return {"batch": batch, "dim": dim, "strings": int(len(offsets) - 1), "gpu_ms": _median_ms(gpu),
            "upload_pool_ms": _median_ms(lambda: [cuda.to_device(a) for a in (data, offsets)]),
            "bit_exact_vs_cpu_kernel": bool(np.array_equal(got.view(np.uint32), np.concatenate(cpu, 1).view(np.uint32)))}


def markdown(rows) -> str:
    bags = [r for r in rows if "lookups" in r]
    strings = [r for r in rows if "strings" in r]
    lines = ["# CUDA kernels on an NVIDIA H200",
             "",
             "Command (on the GPU machine, no TensorFlow there): `python3 benchmarks/cuda_bags.py --out docs/benchmarks/cuda_bags`",
             "(numba 0.68.0, numba-cuda 0.30.4, torch 2.11 cu130; medians of 50 CUDA-event timings, one run;",
             "run-to-run swings of 20-40% are usual at these durations).",
             "",
             "## Embedding bags over pre-hashed ids (kernels/cuda_embedding_bag.py)",
             "",
             "26 Criteo tables, 0-4 ids a row (~5% empty), mean. *ours*: `embedding_bags()` (one launch for",
             "every column, then the 8-byte error flag read back); *kernel*: the launch alone (timed after",
             "*ours*, so clocks differ: it can read slower); *torch*: `torch.nn.functional.embedding_bag` per",
             "table + `torch.cat`. Our bits equal the CPU kernel's (`reduce_runs`, bit-exact with TF) in every",
             "row; torch's differ by up to 1 ulp (its own order).",
             "",
             "| dim | batch | lookups | ours ms | kernel ms | torch ms | torch / ours | kernel row reads GB/s | bit-exact |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['dim']} | {r['batch']} | {r['lookups']} | {r['ours_ms']:.3f} | {r['kernel_ms']:.3f} | "
              f"{r['torch_ms']:.3f} | {r['speedup_vs_torch']:.2f}x | {r['kernel_row_GBps']:.0f} | "
              f"{r['bit_exact_vs_cpu_kernel']} |" for r in bags]
    lines += ["",
              "## Whole hash-bucket columns from strings (kernels/cuda_string_bag.py)",
              "",
              "26 columns of [batch, 4] Criteo-like strings (\"\" padding, ~5% empty rows), hashed on the GPU",
              "with the library's own Fingerprint64 and pooled (mean). *gpu*: `string_bags()` with the byte",
              "pool already on the device; *upload*: copying the pool (bytes + offsets) from pageable host",
              "memory. Bits checked against the CPU string bag (bit-exact with TF).",
              "",
              "| dim | batch | strings | gpu ms | upload ms | bit-exact |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['dim']} | {r['batch']} | {r['strings']} | {r['gpu_ms']:.3f} | {r['upload_pool_ms']:.3f} | "
              f"{r['bit_exact_vs_cpu_kernel']} |" for r in strings]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="1024,16384,131072")
    p.add_argument("--dims", default="16,64")
    p.add_argument("--string-batches", default="1024,16384")
    p.add_argument("--out", help="writes OUT.json and OUT.md")
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
        for batch in map(int, args.string_batches.split(",")):
            rows.append(measure_strings(batch, dim, bags, rng))
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(rows, f, indent=2)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(rows))


if __name__ == "__main__":
    main()

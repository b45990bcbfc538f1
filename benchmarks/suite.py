"""The benchmark suite: stock TF against tf_blade on the bundled Criteo models (issue 5).

    python -m benchmarks.suite [--models criteo-fc,criteo-wdl,keras-prep] [--batches 1,64,512,4096]
                               [--rounds 40] [--out docs/benchmarks/suite] [--skip-compile]
    python -m benchmarks ...      (the same; python -m tf_blade.benchmarks or tf-blade bench, installed)

Every figure is a median of interleaved rounds (every side once a round, in one process, in a
fresh random order each round: a call right after stock TF's runs slower; this machine is shared
and noisy: ratios hold, absolute times drift). Columns:
  tf            stock TF, graph mode, Grappler on, default thread pools
  native/numpy  tf_blade with the native op / the numpy_function fallback (numpy timed apart,
                scaled to the same TF median: its per-call table copies would evict the others'),
                called as returned: eager tensors skip TF's Python argument binding
                (tf_blade/fast_call.py)
  native, TF's call  the same function called through TF's ConcreteFunction.__call__: the
                fused op's gain alone, as a caller that is not Python (TF Serving) sees it
  xla           stock TF's function with XLA auto-clustering on (tf.config.optimizer.set_jit, and
                --tf_xla_cpu_global_jit, which a CPU needs): XLA compiles the clusters of ops it
                supports, TF runs the rest; timed less what switching the setting around a call
                costs (stock TF with the setting switched, tf_switched, less stock TF), with the
                clusters formed and whether the outputs equal stock TF's
  call floor    a trivial function with the same inputs, called as stock TF is, and with
                tf_blade's call (fast floor)
  floor + head  the fast floor, running the part tf_blade leaves to TF (the model's dense layers,
                on this batch's feature matrix computed once): what tf_blade would take if its
                fused op cost nothing. ceiling = tf / that (tf / fast floor for criteo-fc): no
                speedup of the feature ops can pass it while they run in a function (criteo-fc's
                native call runs its one fused op without one: fast_call's _RunOp)
  torch         torch.nn.functional.embedding_bag (2 threads) over the same pre-hashed ids,
                one call per table: the hand-fused anchor for the embedding part (if installed)
  plain gather  our fastest plain Numba gather-and-mean over the same pre-hashed ids
  fused pooling the fused layer's embedding part alone over those ids: its blocks, each column
                pooled by the kernel the layer runs once a block is hashed (torch's like)
  memory floor  bytes of the distinct embedding rows the batch reads / measured random-access
                bandwidth (repeated ids hit the cache, so distinct rows are what memory must serve)
Also: compile cold/warm and recompiles across batch sizes (fresh processes), throughput with 1
and 2 concurrent callers (medians of interleaved rounds; tf_blade as optimize() builds it, and
in a child process with TF_BLADE_PARALLEL=0, its kernels on the caller's thread: the GIL test,
since one parallel call already keeps both cores busy), peak RSS of this process. Writes
<out>.json, <out>.md and <out>.png.
"""
from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # torch's OpenMP workers: sleep, do not spin
import resource
import sys
import threading
import time

import numpy as np

from . import child_json


def _models():
    from tf_blade import examples as ex
    # name: (model builder, batch maker, the serve signature's argument names in order,
    #        the embedding lookups a batch makes, pre-hashed for the anchors,
    #        the model's dense head on this batch's features, or None)
    return {
        "criteo-fc": (lambda: ex.criteo_feature_model(26), lambda b: ex.synthetic_batch(b, 26),
                      ex.column_names(26), _pre_hashed, None),
        "criteo-wdl": (lambda: ex.criteo_wdl_model(26, 13),
                       lambda b: {**ex.synthetic_batch(b, 26), **ex.synthetic_numeric(b, 13)},
                       ex.column_names(26) + ex.numeric_names(13), _pre_hashed, _wdl_head),
        "keras-prep": (lambda: ex.keras_prep_model(26), lambda b: ex.synthetic_batch(b, 26),
                       ex.column_names(26), _pre_hashed_keras, _keras_prep_head),
    }


def _wdl_head(module, x):
    """Wide & deep's dense part on features computed once: (the DNN's input, the wide logit) ->
    logit, as ``serve`` ends."""
    import tensorflow as tf
    deep = tf.constant(module.deep_input(x))
    wide = tf.constant(tf.reduce_sum(module.wide_input(x), axis=1, keepdims=True))
    return lambda: {"logit": module.dnn(deep) + wide}


def _keras_prep_head(module, x):
    """keras-prep's DNN on its pooled embeddings computed once."""
    import tensorflow as tf
    pooled = tf.constant(tf.concat([tf.reduce_mean(emb(hashing(x[name])), axis=1) for name, hashing, emb
                                    in zip(_string_columns(x), module.hashing, module.embeddings)], axis=1))
    return lambda: {"logit": module.dnn(pooled)}


def _string_columns(raw):
    return sorted((k for k in raw if k.startswith("C")), key=lambda k: int(k[1:]))


def _pre_hashed(module, raw):
    """Per column (table, ids, offsets) as the feature columns' lookups see them: "" dropped, ids
    hashed by TF itself; tables are the model's own variables."""
    import tensorflow as tf
    from tf_blade.examples import CRITEO_BUCKETS
    tables = {v.name.split("/")[1].split("_embedding")[0]: v for v in module.variables
              if "_embedding" in v.name and v.shape[1] > 1}
    out = []
    for i, name in enumerate(_string_columns(raw)):
        strings = raw[name]
        keep = strings != b""
        ids = tf.strings.to_hash_bucket_fast(strings[keep].astype(object), CRITEO_BUCKETS[i % 26]).numpy()
        offsets = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
        out.append((tables[name].numpy(), ids.astype(np.int64), offsets))
    return out


def _pre_hashed_keras(module, raw):
    """The same for keras-prep: every slot is looked up, padding included."""
    import tensorflow as tf
    out = []
    for name, hashing, emb in zip(_string_columns(raw), module.hashing, module.embeddings):
        strings = raw[name]
        ids = tf.strings.to_hash_bucket_fast(strings.ravel().astype(object), hashing.num_bins).numpy()
        offsets = np.arange(0, strings.size + 1, max(strings.shape[1], 1), dtype=np.int64)
        out.append((emb.embeddings.numpy(), ids.astype(np.int64), offsets))
    return out


def _plain_gather():
    """Our fastest plain gather-and-mean: all tables stacked into one array (ids shifted by each
    table's first row), one prange over rows, flat scalar loops (no per-row array views), the
    next row's table rows prefetched (kernels/prefetch.py; 1.2x at 4096)."""
    from numba import njit, prange

    from tf_blade.kernels.prefetch import prefetch_row

    @njit(parallel=True, nogil=True, cache=True)
    def bag_mean(stacked, ids, offsets, dim, out):
        n_cols, n_rows = offsets.shape[0], offsets.shape[1] - 1
        for r in prange(n_rows):
            for c in range(n_cols):
                if r + 1 < n_rows:
                    for k in range(offsets[c, r + 1], offsets[c, r + 2]):
                        prefetch_row(stacked, ids[c, k])
                base = c * dim
                for j in range(dim):
                    out[r, base + j] = 0
                for k in range(offsets[c, r], offsets[c, r + 1]):
                    row = ids[c, k]
                    for j in range(dim):
                        out[r, base + j] += stacked[row, j]
                n = offsets[c, r + 1] - offsets[c, r]
                if n > 0:
                    for j in range(dim):
                        out[r, base + j] /= n

    def prepare(lookups):
        tables = [t for t, _, _ in lookups]
        first = np.cumsum([0] + [len(t) for t in tables[:-1]])
        width = max(max(len(i) for _, i, _ in lookups), 1)
        ids = np.zeros((len(lookups), width), np.int64)
        for c, (_, i, _) in enumerate(lookups):
            ids[c, :len(i)] = i + first[c]
        offsets = np.stack([o for _, _, o in lookups])
        return np.concatenate(tables), ids, offsets
    return bag_mean, prepare


def _fused_pooling():
    """The embedding part of the fused feature layer alone (kernels/bag_layer.py's blocks of BLOCK
    rows in parallel, 2 threads), over pre-hashed ids in the plain gather's layout: each column of
    a block pooled by the kernel fill_rows runs once the block's strings are hashed, reduce_runs
    for a bag of 0-4 ids (``k`` < 0), pool_vectors for Keras's rows of ``k`` ids each."""
    from numba import njit, prange

    from tf_blade.kernels.bag_layer import BLOCK
    from tf_blade.kernels.pooled_gather import pool_vectors
    from tf_blade.kernels.sparse_segment_reduction import MEAN, reduce_runs

    @njit(parallel=True, nogil=True, cache=True)
    def pool(stacked, ids, offsets, dim, k, out):
        n_cols, n_rows = offsets.shape[0], offsets.shape[1] - 1
        for b in prange((n_rows + BLOCK - 1) // BLOCK):
            r0 = b * BLOCK
            m = min(n_rows, r0 + BLOCK) - r0
            runs = np.arange(r0, r0 + m)
            for c in range(n_cols):
                if k >= 0:
                    pool_vectors(stacked, ids[c, r0 * k:(r0 + m) * k].reshape((m, k)), True, out, c * dim, r0, n_rows)
                    continue
                for i in range(m):
                    if offsets[c, r0 + i] == offsets[c, r0 + i + 1]:  # an empty row pools to zeros
                        for j in range(dim):
                            out[r0 + i, c * dim + j] = 0
                reduce_runs(stacked, ids[c], offsets[c, r0:r0 + m + 1], runs, MEAN, out, c * dim)
    return pool


def random_access_bandwidth(row_bytes=64, buffer_mb=512, lookups=4_000_000):
    """Bytes per second this machine reads when every ``row_bytes`` row is a random one (2 threads),
    rows prefetched 16 ahead (kernels/prefetch.py: 1.5-1.7x the bandwidth without)."""
    from numba import njit, prange

    from tf_blade.kernels.prefetch import PREFETCH_IDS, prefetch_row

    @njit(parallel=True, nogil=True)
    def gather_sum(buf, idx, out):
        for t in prange(out.shape[0]):
            s = np.float32(0)
            for k in range(t * 1000, (t + 1) * 1000):
                if k + PREFETCH_IDS < idx.shape[0]:
                    prefetch_row(buf, idx[k + PREFETCH_IDS])
                row = buf[idx[k]]
                for j in range(row.shape[0]):
                    s += row[j]
            out[t] = s

    rows = buffer_mb * 2**20 // row_bytes
    buf = np.ones((rows, row_bytes // 4), np.float32)
    idx = np.random.default_rng(0).integers(0, rows, lookups)
    out = np.zeros(lookups // 1000, np.float32)
    gather_sum(buf, idx, out)
    best = min(_timed(lambda: gather_sum(buf, idx, out)) for _ in range(5))
    return lookups * row_bytes / best


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# TF reads TF_XLA_FLAGS at its first use of XLA; without this flag auto-clustering leaves a CPU's
# ops alone. While TF's jit setting is off (every side but xla) it clusters nothing either way.
XLA_CPU_FLAG = "--tf_xla_cpu_global_jit"


def _auto_jit(on: bool):
    import tensorflow as tf
    tf.config.optimizer.set_jit("autoclustering" if on else False)


def _xla_call(fn, args, on=True):
    """``fn(*args)`` with XLA auto-clustering on: the setting is TF's and process-wide, so it is on
    for this call only (TF keeps a function's instances per setting: the other sides still run
    stock TF's graph). ``on=False``: the same switching around stock TF's call, the control."""
    _auto_jit(on)
    try:
        return fn(*args)
    finally:
        _auto_jit(False)


def _xla_clusters(fn, args) -> int:
    """The XLA clusters auto-clustering formed, read at ``fn``'s first auto-clustered call: TF's
    run metadata holds a function's graph only for the call that instantiates it."""
    from tensorflow.python.eager import context
    ctx = context.context()
    ctx.enable_run_metadata()
    try:
        _xla_call(fn, args)
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    return sum(node.op == "_XlaRun" for g in metadata.function_graphs for p in g.partition_graphs for node in p.node)


WINDOW_S, WINDOW_ROUNDS = 1.0, 5  # throughput: medians of this many interleaved windows of this length


def _throughput(fn, callers=1, seconds=WINDOW_S):
    """Calls of ``fn`` per second by ``callers`` threads calling it in a loop for ``seconds``."""
    counts, errors = [0] * callers, []
    stop = time.perf_counter() + seconds

    def run(k):
        try:
            while time.perf_counter() < stop:
                fn()
                counts[k] += 1
        except Exception as e:  # a thread's exception would only reach its excepthook
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(counts) / seconds


def _median_throughputs(sides, rounds=WINDOW_ROUNDS):
    """{name: (fn, callers)} -> {name: median calls/s}: one window of each side a round."""
    from tf_blade.timing import interleaved
    return interleaved(sides, rounds=rounds, warmup=0, sample=lambda side: _throughput(*side))


def serial_throughput(name, batch=512):
    """``name``'s model at ``batch`` as this process builds it: whether it gives stock TF's
    output, and its calls/s with 1 and 2 callers. Run by ``_serial_child``, in a process with
    TF_BLADE_PARALLEL=0 (a process reads it once: one process cannot hold both builds)."""
    import tensorflow as tf

    import tf_blade
    from tf_blade.runtime.threads import parallel_enabled
    build, make_batch, names, _, _ = _models()[name]
    module = build()
    fn = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    raw = make_batch(batch)
    args = [tf.constant(raw[n]) for n in names]
    key = list(module.serve.get_concrete_function().structured_outputs)[0]
    return {"serial_identical": bool(np.array_equal(module.serve(*args)[key].numpy(), fn(*args)[key].numpy())),
            "serial_parallel_off": not parallel_enabled(),
            **_median_throughputs({"serial_1_caller": (lambda: fn(*args), 1),
                                   "serial_2_callers": (lambda: fn(*args), 2)})}


def _serial_child(name):
    """``serial_throughput(name)`` in a fresh process with TF_BLADE_PARALLEL=0 (this module, as
    this process imported it); {"serial_error": why} when that process fails."""
    module = __spec__.name if __spec__ is not None else "tf_blade.benchmarks.suite"
    code = f"import json, {module} as suite; print(json.dumps(suite.serial_throughput({name!r})))"
    try:
        return child_json(["-c", code], dict(os.environ, TF_BLADE_PARALLEL="0"))
    except RuntimeError as e:
        print(f"serial build of {name}: {e}", file=sys.stderr)
        return {"serial_error": str(e).splitlines()[-1][:200]}


def _named_params(body, like):
    """``body(*tensors)`` as a ConcreteFunction with ``like``'s parameters, by name (a ``*args``
    function gets no fast call: tf_blade/fast_call.py)."""
    import inspect

    import tensorflow as tf
    specs = like.structured_input_signature[0]
    body.__signature__ = inspect.Signature([inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                            for i in range(len(specs))])
    return tf.function(body, input_signature=specs).get_concrete_function()


def measure(name, batches, rounds, bandwidth):
    import tensorflow as tf
    from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction

    import tf_blade
    from tf_blade.fast_call import FastCall, with_fast_call
    from tf_blade.timing import interleaved
    build, make_batch, names, pre_hashed, head = _models()[name]
    module = build()
    stock = module.serve.get_concrete_function()
    native = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    numpy_fn = tf_blade.optimize(module.serve, bridge="numpy").signatures["serving_default"]
    # one trivial function, called both ways (as native is): TF's call, and tf_blade's
    fast_floor = with_fast_call(_named_params(lambda *a: a[0][:1, :1], stock))
    assert isinstance(fast_floor, FastCall) and isinstance(native, FastCall)
    xla_clusters = None
    bag_mean, prepare_gather = _plain_gather()
    fused_pool = _fused_pooling()
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    key = list(stock.structured_outputs)[0]
    rows = []
    for batch in batches:
        raw = make_batch(batch)
        args = [tf.constant(raw[n]) for n in names]
        want = stock(*args)[key].numpy()
        identical = bool(np.array_equal(want, native(*args)[key].numpy()))
        sides = {"tf": lambda: stock(*args), "native": lambda: native(*args), "call_floor": lambda: ConcreteFunction.__call__(fast_floor, *args),
                 "native_tf_call": lambda: ConcreteFunction.__call__(native, *args),
                 "fast_floor": lambda: fast_floor(*args)}
        if head is not None:  # the call floor plus the dense layers tf_blade leaves to TF
            run_head = head(module, {n: tf.constant(raw[n]) for n in names})
            head_floor = with_fast_call(_named_params(lambda *a: run_head(), stock))
            sides["floor_head"] = lambda: head_floor(*args)
        anchors = {}
        if xla_clusters is None:
            xla_clusters = _xla_clusters(stock, args)
        sides.update(xla=lambda: _xla_call(stock, args), tf_switched=lambda: _xla_call(stock, args, on=False))
        lookups = pre_hashed(module, raw)
        ids = [i for _, i, _ in lookups]
        dim = lookups[0][0].shape[1]
        stacked, flat_ids, offsets = prepare_gather(lookups)
        out = np.zeros((batch, dim * len(lookups)), np.float32)
        anchors["plain_gather"] = lambda: bag_mean(stacked, flat_ids, offsets, dim, out)
        k = len(ids[0]) // batch if name == "keras-prep" and batch else -1  # Keras: every row k ids
        pooled = np.zeros_like(out)
        anchors["fused_pool"] = lambda: fused_pool(stacked, flat_ids, offsets, dim, k, pooled)
        if torch is not None:
            tt = [(torch.from_numpy(t), torch.from_numpy(i), torch.from_numpy(o[:-1])) for t, i, o in lookups]
            anchors["torch"] = lambda: [torch.nn.functional.embedding_bag(i, t, o, mode="mean") for t, i, o in tt]
        times = interleaved(sides, rounds=rounds)
        times["xla"] -= times["tf_switched"] - times["tf"]  # the switching's cost, as stock TF pays it
        # XLA compiles a cluster lazily, after it has run TF's ops a few times: its outputs after the
        # timed calls are those they gave
        xla_out = _xla_call(stock, args)[key].numpy()
        xla_diff = float(np.abs(want - xla_out).max()) if want.size else 0.0
        xla_same = bool(np.array_equal(want, xla_out))
        assert np.array_equal(want, stock(*args)[key].numpy()), "stock TF's outputs changed after XLA's calls"
        # The anchors run apart: their worker threads keep spinning after a call and would slow
        # whichever side ran next in one interleaved loop.
        times.update(interleaved(anchors, rounds=rounds))
        pair = interleaved({"tf": lambda: stock(*args), "numpy": lambda: numpy_fn(*args)},
                           rounds=max(rounds // 4, 5))
        times["numpy"] = pair["numpy"] * times["tf"] / pair["tf"]
        assert np.allclose(pooled, out, rtol=1e-5, atol=1e-6), "the pooling anchors disagree"
        n_lookups = int(sum(len(i) for i in ids))
        distinct = int(sum(len(np.unique(i)) for i in ids))
        times["memory_floor"] = distinct * dim * 4 / bandwidth
        row = {"model": name, "batch": batch, "identical": identical, "lookups": n_lookups,
               "xla_clusters": xla_clusters, "xla_identical": xla_same, "xla_max_abs_diff": xla_diff,
               "distinct_rows": distinct,
               "median_ms": {k: v * 1e3 for k, v in times.items()},
               "speedup_native": times["tf"] / times["native"], "speedup_numpy": times["tf"] / times["numpy"],
               "speedup_tf_call": times["tf"] / times["native_tf_call"],
               "ceiling": times["tf"] / times.get("floor_head", times["fast_floor"])}
        if "torch" in times:
            row["pooling_vs_torch"] = times["torch"] / times["fused_pool"]
        if batch == 512:  # stock TF too: how much a second caller can add when one call uses both cores
            t = _median_throughputs({"1_caller": (lambda: native(*args), 1), "2_callers": (lambda: native(*args), 2),
                                     "tf_1_caller": (lambda: stock(*args), 1), "tf_2_callers": (lambda: stock(*args), 2)})
            t.update(_serial_child(name), window_s=WINDOW_S, windows=WINDOW_ROUNDS)
            t.update(ratio=t["2_callers"] / t["1_caller"], tf_ratio=t["tf_2_callers"] / t["tf_1_caller"])
            if "serial_1_caller" in t:
                t["serial_ratio"] = t["serial_2_callers"] / t["serial_1_caller"]
            row["throughput_calls_per_s"] = t
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows, _xla_note(rows)


def _xla_note(rows):
    """What XLA auto-clustering did with one model: its clusters, and its outputs against stock TF's."""
    n = rows[0]["xla_clusters"]
    batches = " / ".join(str(r["batch"]) for r in rows)
    if all(r["xla_identical"] for r in rows):
        outputs = f"its outputs are identical to stock TF's at batch {batches}"
    else:
        diffs = " / ".join("identical" if r["xla_identical"] else f"{r['xla_max_abs_diff']:.1e}" for r in rows)
        outputs = f"its outputs differ from stock TF's by at most {diffs} at batch {batches}"
    return f"{n} cluster{'' if n == 1 else 's'} formed; {outputs}"


def _markdown(result):
    lines = [f"# Benchmark suite\n\nCommand: `{result['command']}` (medians of {result['rounds']} "
             f"interleaved rounds, this 2-core machine; ratios hold, times drift)\n",
             f"Random-access bandwidth (64-byte rows, 2 threads): {result['bandwidth_gb_s']:.2f} GB/s. "
             f"Peak RSS of the benchmark process: {result['peak_rss_mb']:.0f} MB.\n",
             "Native is tf_blade's function called as optimize() returns it: eager tensors skip TF's Python "
             "argument binding (tf_blade/fast_call.py), and criteo-fc's, one fused op and nothing else, runs "
             "that op without a function. \"via TF's call\" calls the same function through "
             "TF's ConcreteFunction.__call__, as stock TF is called: the fused op's gain alone, what a caller "
             "that is not Python (TF Serving) sees. The call floor is a trivial function with the same inputs, "
             "through TF's call and through tf_blade's (fast floor).\n",
             "Ceiling: stock TF over the fast floor plus the dense layers tf_blade leaves to TF (floor + head), "
             "i.e. the speedup if the fused op took no time.\n",
             "XLA: stock TF's function with XLA auto-clustering on (XLA compiles the ops it supports, TF runs "
             "the rest), less what switching TF's jit setting around a call costs stock TF; the notes "
             "below the table say how many XLA clusters auto-clustering formed in the function and "
             "whether its outputs equal stock TF's.\n",
             "torch embedding_bag, fused pooling and plain gather pool the same pre-hashed ids (2 threads each): "
             "torch one call per table, fused pooling the fused layer's own pooling kernels in its blocks "
             "(the embedding part alone: native's time also hashes the strings).\n",
             "| model | batch | stock TF ms | native ms | speedup | ceiling | native via TF's call ms | speedup via TF's call | "
             "numpy_function ms | XLA ms | call floor ms | fast floor ms | "
             "floor + head ms | torch embedding_bag ms | fused pooling ms | torch / fused pooling | plain gather ms | "
             "memory floor ms | identical |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        t = r["median_ms"]
        cell = lambda k: f"{t[k]:.3f}" if k in t else "n/a"  # noqa: E731
        ceiling = f"{r['ceiling']:.2f}x" if "ceiling" in r else "n/a"
        lines.append(f"| {r['model']} | {r['batch']} | {t['tf']:.3f} | {t['native']:.3f} | "
                     f"{r['speedup_native']:.2f}x | {ceiling} | {cell('native_tf_call')} | "
                     + (f"{r['speedup_tf_call']:.2f}x" if "speedup_tf_call" in r else "n/a")
                     + f" | {t['numpy']:.3f} | {cell('xla')} | {t['call_floor']:.3f} | {cell('fast_floor')} | "
                     f"{cell('floor_head')} | {cell('torch')} | {cell('fused_pool')} | "
                     + (f"{r['pooling_vs_torch']:.2f}x" if "pooling_vs_torch" in r else "n/a")
                     + f" | {t['plain_gather']:.3f} | {t['memory_floor']:.3f} | {r['identical']} |")
    lines.append("")
    for model, note in result["xla"].items():
        lines.append(f"XLA auto-clustering on {model}: {note}.")
    timed = [r for r in result["rows"] if "throughput_calls_per_s" in r]
    t0 = timed[0]["throughput_calls_per_s"] if timed else {}
    how = (f"medians of {t0['windows']} interleaved {t0['window_s']:g}-second windows" if "windows" in t0
           else "one 2-second window each")
    lines += ["", f"Throughput (calls/s, {how}). Serial: tf_blade built with TF_BLADE_PARALLEL=0 in a child "
              "process (its columns interleaved with each other only), every kernel on its caller's thread, so "
              "a second caller finds a core free only if the calls hold no lock between them (the GIL).", "",
              "| model | 1 caller | 2 callers | ratio | serial 1 caller | serial 2 callers | serial ratio "
              "| stock TF 1 caller | stock TF 2 callers | stock TF ratio |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for r in timed:
        t = r["throughput_calls_per_s"]
        lines.append(f"| {r['model']} @ {r['batch']} | {t['1_caller']:.0f} | {t['2_callers']:.0f} | {t['ratio']:.2f}x | "
                     + (f"{t['serial_1_caller']:.0f} | {t['serial_2_callers']:.0f} | {t['serial_ratio']:.2f}x | "
                        if "serial_ratio" in t else "n/a | n/a | n/a | ")
                     + f"{t['tf_1_caller']:.0f} | {t['tf_2_callers']:.0f} | {t['tf_ratio']:.2f}x |")
        if "serial_error" in t:
            notes.append(f"Serial build of {r['model']}: failed ({t['serial_error']}).")
        elif t.get("serial_identical") is False or t.get("serial_parallel_off") is False:
            notes.append(f"Serial build of {r['model']}: identical to TF {t['serial_identical']}, "
                         f"parallel off {t['serial_parallel_off']}.")
    if notes:
        lines += [""] + notes
    c = result.get("compile")
    if c:
        lines += ["", "Compile (fresh processes; kernels compile inside optimize()"
                  + (", figures kept from the last run without --skip-compile" if result.get("compile_kept") else "") + "):", "",
                  "| criteo-fc (26 columns) unless named | import tf_blade s | optimize incl. compile s | first call s | Numba compiles (this process; a cold start's child compiles more) | recompiles across batch 0..4096 |",
                  "|---|---|---|---|---|---|"]
        for kind, label in (("cold", "cold (empty caches)"), ("warm", "warm (disk caches)"),
                            ("new_model", "new model (kernel library cached, model's code cold)"),
                            ("new_wdl", "wide & deep (26 + 13 columns) as a new model on that library")):
            if kind not in c:  # figures kept from a run before this row existed
                continue
            imported = f"{c[kind]['import_s']:.2f}" if "import_s" in c[kind] else "not measured"
            lines.append(f"| {label} | {imported} | {c[kind]['rewrite_s']:.2f} | {c[kind]['first_call_s']:.2f} | "
                         f"{c[kind].get('numba_compiles', 'not counted')} | "
                         f"{c[kind]['recompiles_across_batches']} |")
    return "\n".join(lines) + "\n"


def _plot(result, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install matplotlib)")
        return
    models = sorted({r["model"] for r in result["rows"]})
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = [r for r in result["rows"] if r["model"] == model]
        x = np.arange(len(rows))
        sides = [k for k in ("tf", "native", "native_tf_call", "numpy", "torch", "fused_pool", "plain_gather", "memory_floor",
                               "call_floor", "floor_head")
                 if all(k in r["median_ms"] for r in rows)]
        width = 0.8 / len(sides)
        for j, side in enumerate(sides):
            ax.bar(x + j * width, [r["median_ms"][side] for r in rows], width, label=side)
        ax.set_xticks(x + 0.4 - width / 2, [str(r["batch"]) for r in rows])
        ax.set_yscale("log")
        ax.set_xlabel("batch")
        ax.set_ylabel("median ms per call (log)")
        ax.set_title(model)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(prog="tf-blade bench", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="criteo-fc,criteo-wdl,keras-prep")
    p.add_argument("--batches", default="1,64,512,4096")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--out", default=os.path.join("docs", "benchmarks", "suite"))
    p.add_argument("--skip-compile", action="store_true",
                   help="keep the compile figures of <out>.json (the cold compile takes minutes)")
    args = p.parse_args(argv)
    if XLA_CPU_FLAG not in os.environ.get("TF_XLA_FLAGS", "").split():  # before TF's first XLA use
        os.environ["TF_XLA_FLAGS"] = f"{os.environ.get('TF_XLA_FLAGS', '')} {XLA_CPU_FLAG}".strip()
    from . import spine
    previous = {}
    if args.skip_compile and os.path.exists(args.out + ".json"):
        with open(args.out + ".json") as f:
            previous = json.load(f)
    compile_figures = previous.get("compile") if args.skip_compile else spine.compile_times(26, wide_and_deep=True)
    bandwidth = random_access_bandwidth()
    result = {"command": "python -m benchmarks.suite " + " ".join(argv if argv is not None else sys.argv[1:]),
              "rounds": args.rounds, "bandwidth_gb_s": bandwidth / 1e9, "rows": [], "xla": {}}
    batches = [int(b) for b in args.batches.split(",")]
    for model in args.models.split(","):
        rows, note = measure(model, batches, args.rounds, bandwidth)
        result["rows"] += rows
        result["xla"][model] = note
    result["compile"] = compile_figures
    result["compile_kept"] = bool(args.skip_compile)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=2)
    text = _markdown(result)
    with open(args.out + ".md", "w") as f:
        f.write(text)
    _plot(result, args.out + ".png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

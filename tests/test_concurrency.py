"""Many threads, one optimized model: results stay bit-identical, kernels compile once."""
import concurrent.futures
import os

import numpy as np
import tensorflow as tf

import tf_blade
from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
from tf_blade.runtime import native

COLUMNS = 3
THREADS = 8
# Calls per thread: 60 keeps CI short; the full soak (issue 6: 8 x 500) by hand with
# TF_BLADE_SOAK_CALLS=500 python -m pytest -q tests/test_concurrency.py
CALLS = int(os.environ.get("TF_BLADE_SOAK_CALLS", 60))


def test_threads_get_bit_identical_results():
    model = criteo_feature_model(COLUMNS, dim=4)
    fn = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
    batches = []
    for seed in range(THREADS):
        raw = synthetic_batch(17 + seed * 13, COLUMNS, seed=seed)
        args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
        batches.append((args, model.serve(*args)["features"].numpy()))
    compiles = native.load().compile_count()

    def worker(i):
        args, want = batches[i]
        for _ in range(CALLS):
            np.testing.assert_array_equal(fn(*args)["features"].numpy(), want)
        return i

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        assert sorted(pool.map(worker, range(THREADS))) == list(range(THREADS))
    assert native.load().compile_count() - compiles <= 1  # the first call compiles, nobody else


_COLD_START = """
import sys, threading
import numpy as np, tensorflow as tf
import tf_blade
from tf_blade.examples import column_names, synthetic_batch
from tf_blade.runtime import compiler, native
fn = tf.saved_model.load(sys.argv[1]).signatures["serve"]
want = np.load(sys.argv[2])
raw = synthetic_batch(33, {columns}, seed=5)
args = {{c: tf.constant(raw[c]) for c in column_names({columns})}}
barrier, results = threading.Barrier({threads}), []
def call():
    barrier.wait()  # all threads reach the uncompiled op together
    results.append(fn(**args)["features"].numpy())
threads = [threading.Thread(target=call) for _ in range({threads})]
[t.start() for t in threads]
[t.join() for t in threads]
assert len(results) == {threads} and all(np.array_equal(r, want) for r in results)
assert native.load().fallback_count() == 0  # the kernel's answers, not TF's ops after a first-run mismatch
print("COMPILES", compiler.compile_count, native.load().compile_count())
"""


def test_threads_on_a_cold_cache_compile_each_kernel_once(tmp_path):
    """A fresh process with an empty cache loads an optimized SavedModel and 8 threads make its
    first call at once: the kernel is generated and compiled once, every thread gets TF's result."""
    import subprocess
    import sys
    model = criteo_feature_model(COLUMNS, dim=4)
    tf_blade.optimize(model, str(tmp_path / "saved"), bridge="native")
    raw = synthetic_batch(33, COLUMNS, seed=5)
    np.save(tmp_path / "want.npy", model.serve(*[tf.constant(raw[c]) for c in column_names(COLUMNS)])["features"].numpy())
    env = dict(os.environ, TF_BLADE_CACHE_DIR=str(tmp_path / "empty_cache"), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", _COLD_START.format(columns=COLUMNS, threads=THREADS),
                             str(tmp_path / "saved"), str(tmp_path / "want.npy")],
                            env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    python_compiles, op_compiles = map(int, result.stdout.split("COMPILES")[1].split())
    assert python_compiles == 1 and op_compiles == 1, result.stdout


def test_concurrent_callers_run_crowded_and_a_lone_caller_does_not():
    """The native op's crowding rule (blade_op.cc InFlight): a lone caller's calls keep their
    parallel columns; calls that overlap another are told so and run serially; both give TF's
    bits. Wide enough inputs that the parallel path really runs when not crowded."""
    import threading
    import time
    model = criteo_feature_model(COLUMNS, dim=4)
    fn = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
    raw = synthetic_batch(32768, COLUMNS, seed=3)  # calls long enough to overlap while another process holds a core
    args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
    want = model.serve(*args)["features"].numpy()
    bridge = native.load()
    fn(*args)  # compiled before anything is counted
    time.sleep(0.1)  # past the 50 ms window of any earlier overlap in this process
    before = bridge.crowded_count()
    for _ in range(5):
        np.testing.assert_array_equal(fn(*args)["features"].numpy(), want)
    assert bridge.crowded_count() == before, "a lone caller was told it was crowded"

    barrier = threading.Barrier(2)
    failures = []

    def caller():
        barrier.wait()
        for _ in range(20):
            if not np.array_equal(fn(*args)["features"].numpy(), want):
                failures.append("differs")
    threads = [threading.Thread(target=caller) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not failures
    assert bridge.crowded_count() - before >= 10, "overlapping callers were not told they were crowded"


def test_many_calls_leave_rss_flat():
    """Issue 6's resource rule, short: after warm-up, 20,000 calls of an optimized model grow RSS
    by less than 200 bytes a call (a leaked tensor or buffer per call would be far more). The
    long run is benchmarks/soak.py (100,000 calls, 50 load/unload cycles)."""
    from tf_blade.timing import rss_mb
    model = criteo_feature_model(COLUMNS, dim=4)
    fn = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
    raw = synthetic_batch(8, COLUMNS, seed=2)
    args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
    for _ in range(2000):
        fn(*args)
    before = rss_mb()
    for _ in range(20000):
        fn(*args)
    assert rss_mb() - before < 20000 * 200 / 2**20

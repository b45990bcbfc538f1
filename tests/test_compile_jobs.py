"""The cold compile's child process (tf_blade/runtime/compile_jobs.py), in fresh processes with
empty Numba caches: what the child compiles, this process loads; a child that fails or is turned
off costs nothing but time; a warm cache starts no child."""
import json
import os
import subprocess
import sys

import pytest

TASKS = """
def first(x):
    return x + 1


def second(x):
    return x * 2


def third(x):
    return x - 3


def fourth(x):
    return x * x
"""

# Runs in a fresh process. This side waits for the child to finish before it claims anything, so
# the child takes every job it can (from the front), whatever the machine's speed. MODE: "child",
# "failing" (the child exits at once), "no start" (its process cannot start) or "off"
# (TF_BLADE_COMPILE_CHILD=0: starting one fails).
SCRIPT = """
import json, os, sys
import tasks
from numba import types
from tf_blade.kernels import parallel
from tf_blade.runtime import compile_jobs

claim = compile_jobs.Child.claim
def claim_after_the_child(self, index):
    if self.process is not None:
        self.process.wait()
    return claim(self, index)
compile_jobs.Child.claim = claim_after_the_child
def no_child(*args):
    raise AssertionError("a child was started")
if os.environ["MODE"] == "failing":
    compile_jobs._CHILD = "import sys; sys.exit(3)"
if os.environ["MODE"] == "off":
    compile_jobs.Child = no_child
if os.environ["MODE"] == "no start":
    def cannot_start(*args, **kwargs):
        raise OSError("no such interpreter")
    compile_jobs.subprocess.Popen = cannot_start

sig = types.int64(types.int64)
def run(*names):
    functions = [getattr(tasks, name) for name in names]
    missing = [compile_jobs.missing_from_cache(sig, f) for f in functions]
    compiled = parallel.compile_tasks({n: (sig, f, "tf_blade_test_" + n) for n, f in zip(names, functions)})
    return {"missing_before": missing, "hits": [compiled[n].cache_hits for n in names],
            "values": [compiled[n].ctypes(10) for n in names],
            "cells": [parallel.task_cell("tf_blade_test_" + n).value == compiled[n].address for n in names],
            "missing_after": [compile_jobs.missing_from_cache(sig, f) for f in functions]}

out = {"cold": run("first", "second", "third")}
compile_jobs.Child = no_child
out["warm"] = run("first", "second", "third")
out["single"] = run("fourth")  # one job missing: compiled here
print(json.dumps(out))
"""


def _run(tmp_path, mode):
    (tmp_path / "tasks.py").write_text(TASKS)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(tmp_path),
               TF_CPP_MIN_LOG_LEVEL="3", MODE=mode, TF_BLADE_COMPILE_CHILD="0" if mode == "off" else "1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # whoever compiled them, the cfuncs compute their functions and their cells hold their addresses
    for run, values in (("cold", [11, 20, 7]), ("warm", [11, 20, 7]), ("single", [100])):
        assert out[run]["values"] == values and all(out[run]["cells"]) and not any(out[run]["missing_after"])
    assert out["cold"]["missing_before"] == [True] * 3 and out["warm"]["missing_before"] == [False] * 3
    assert out["warm"]["hits"] == [1, 1, 1]  # loaded, and no child started
    assert out["single"]["missing_before"] == [True] and out["single"]["hits"] == [0]  # one missing: compiled here
    return out["cold"]["hits"]


def test_what_the_child_compiles_this_process_loads_from_the_cache(tmp_path):
    assert _run(tmp_path, "child") == [1, 1, 1]  # all three came from the child's compiles


@pytest.mark.parametrize("mode", ["failing", "no start"])
def test_a_child_that_fails_leaves_the_compiles_to_this_process(tmp_path, mode):
    assert _run(tmp_path, mode) == [0, 0, 0]


def test_without_a_child_this_process_compiles_everything(tmp_path):
    assert _run(tmp_path, "off") == [0, 0, 0]


# A real layer, cold then warm, each in a fresh process: the child compiles some of the layer's
# tasks (the kernel library imported without TensorFlow), and what it compiled computes as TF does.
MODEL = """
import numpy as np, tensorflow as tf, tf_blade
from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
from tf_blade.runtime import compile_jobs
started = []
start = compile_jobs.Child.__init__
compile_jobs.Child.__init__ = lambda self, jobs: started.append(len(jobs)) or start(self, jobs)
model = criteo_feature_model(3, dim=4)
served = tf_blade.optimize(model.serve, bridge="native").signatures["serving_default"]
x = synthetic_batch(300, 3)
args = [tf.constant(x[c]) for c in column_names(3)]
np.testing.assert_array_equal(model.serve(*args)["features"], served(*args)["features"])
print("CHILDREN", started)
"""


def test_a_layer_compiled_cold_with_a_child_matches_tf(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), TF_BLADE_CACHE_DIR=str(tmp_path / "tf_blade"),
               TF_CPP_MIN_LOG_LEVEL="3", TF_BLADE_COMPILE_CHILD="1")
    runs = [subprocess.run([sys.executable, "-c", MODEL], env=env, capture_output=True, text=True, timeout=600)
            for _ in ("cold", "warm")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    started = [run.stdout.strip().splitlines()[-1] for run in runs]
    assert started[0].startswith("CHILDREN [") and started[0] != "CHILDREN []"  # cold: a child took part
    assert started[1] == "CHILDREN []"  # warm: everything loads, no child


def test_the_cold_parts_of_a_cluster_compile_in_the_child(monkeypatch):
    # Two parts no earlier run compiled (each has a constant of this run's own): the generated
    # cluster module hands both to compile_tasks; this side waits for the child before claiming,
    # so the child compiles both, and this process loads them from the cache. They compute as TF does.
    import numpy as np
    import tensorflow as tf

    import tf_blade
    from tf_blade.runtime import compile_jobs
    monkeypatch.setenv("TF_BLADE_COMPILE_CHILD", "1")  # the suite's default is off (conftest.py)
    if not compile_jobs.enabled():
        pytest.skip("one core: no compile child")
    claim, start, jobs = compile_jobs.Child.claim, compile_jobs.Child.__init__, []

    def claim_after_the_child(self, index):
        if self.process is not None:
            self.process.wait()
        return claim(self, index)

    def recording_start(self, child_jobs):
        jobs.append(sorted(function.__module__ for _, function, _ in child_jobs))
        start(self, child_jobs)

    monkeypatch.setattr(compile_jobs.Child, "claim", claim_after_the_child)
    monkeypatch.setattr(compile_jobs.Child, "__init__", recording_start)
    fresh = int.from_bytes(os.urandom(4), "little") + 2

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.float32)])
    def f(a, b):
        return {"ints": (a * 3 + fresh) % 7, "floats": tf.maximum(b * 2.0, 1.0) - float(fresh)}

    served = tf_blade.optimize(f, bridge="native").signatures["serving_default"]
    assert len(jobs) == 1 and len(jobs[0]) == 2 and all(name.startswith("tf_blade_part_") for name in jobs[0])
    assert [sys.modules[name]._compiled[0].cache_hits for name in jobs[0]] == [1, 1]  # the child's compiles
    a, b = tf.constant([5, -4, 0, 2**62], tf.int64), tf.constant([0.25, -3.0, 7.5, np.nan], tf.float32)
    got, want = served(a=a, b=b), f(a, b)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])

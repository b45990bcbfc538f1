"""A serving process keeps serving (issue 6): kernels that fail to compile, broken caches."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
from tf_blade.runtime import compiler
from tf_blade.runtime.threads import parallel_enabled

COLUMNS = 2


@pytest.fixture(scope="module")
def module():
    return criteo_feature_model(COLUMNS, dim=4)


def _ops(fn):
    graph = fn.graph.as_graph_def()
    return {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}


def test_kernel_that_fails_to_compile_leaves_its_cluster_to_tf(module, monkeypatch, rng):
    def broken(spec_text):
        raise RuntimeError("injected: Numba rejected the kernel")
    monkeypatch.setattr(compiler, "load_kernel", broken)
    with pytest.warns(RuntimeWarning, match="failed to compile: RuntimeError: injected"):
        opt = tf_blade.optimize(module.serve, bridge="native")
    monkeypatch.undo()
    assert opt.report.fused_ops == 0
    failure, = opt.report.functions["serving_default"]["compile_failed"]
    assert "injected" in failure["reason"] and failure["tf_ops"] > 10
    assert "kernel failed to compile" in str(opt.report)
    fn = opt.signatures["serving_default"]
    assert "BladeFusedCall" not in _ops(fn) and "SparseSegmentMean" in _ops(fn)
    raw = synthetic_batch(17, COLUMNS, seed=int(rng.integers(1 << 30)))
    args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
    np.testing.assert_array_equal(fn(*args)["features"].numpy(), module.serve(*args)["features"].numpy())


_SERVE = textwrap.dedent("""
    import sys, warnings
    import numpy as np, tensorflow as tf
    import tf_blade
    from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch
    m = criteo_feature_model({columns}, dim=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = tf_blade.optimize(m.serve, bridge="native")
    raw = synthetic_batch(19, {columns}, seed=3)
    args = [tf.constant(raw[c]) for c in column_names({columns})]
    assert opt.report.fused_ops == 1, str(opt.report)
    np.testing.assert_array_equal(opt.signatures["serving_default"](*args)["features"].numpy(),
                                  m.serve(*args)["features"].numpy())
    print("SERVED", [str(w.message)[:120] for w in caught if "tf_blade" in str(w.message)])
""")


def _serve(cache, **extra_env):
    env = dict(os.environ, TF_BLADE_CACHE_DIR=str(cache), TF_CPP_MIN_LOG_LEVEL="3", **extra_env)
    result = subprocess.run([sys.executable, "-c", _SERVE.format(columns=COLUMNS)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and "SERVED" in result.stdout, result.stderr[-3000:]
    return result.stdout + result.stderr


def _kernel_files(cache):
    for folder, _, files in os.walk(os.path.join(cache, "kernels")):
        for name in files:
            yield os.path.join(folder, name)


def _cluster_sources(cache):
    return [p for p in _kernel_files(str(cache)) if os.path.basename(p).startswith("k_") and p.endswith(".py")]


def test_corrupt_and_read_only_caches_still_serve(tmp_path):
    cache = tmp_path / "cache"
    _serve(cache)  # fills the cache: native op, generated sources, Numba's machine code
    if parallel_enabled():  # the two columns ran as one parallel step
        assert any("tf_blade_group_" in open(p).read() for p in _cluster_sources(cache))
    cached = [p for p in _kernel_files(str(cache)) if p.endswith((".nbi", ".nbc"))]
    assert cached, "the first process left no Numba cache"

    for path in _kernel_files(str(cache)):  # truncate everything: sources, indexes, machine code
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 3)
    _serve(cache)  # served, bit-exact, from a cache it had to repair

    blocked = tmp_path / "a_file"  # a cache path that cannot be created (works as root too)
    blocked.write_text("")
    assert "is not writable" in _serve(blocked / "cache")


def test_without_parallel_columns_results_are_the_same(tmp_path):
    # TF_BLADE_PARALLEL=0 (or no TBB) runs a layer's columns one after another, bit-identical
    _serve(tmp_path / "cache", TF_BLADE_PARALLEL="0")
    sources = _cluster_sources(tmp_path / "cache")
    assert sources and not any("tf_blade_group_" in open(p).read() for p in sources)  # no parallel steps

"""A serving process keeps serving (issue 6): kernels that fail to compile, broken caches."""
import os
import re
import shutil
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

from conftest import error_core, op_counts, running_nodes

COLUMNS = 2


@pytest.fixture(scope="module")
def module():
    return criteo_feature_model(COLUMNS, dim=4)


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
    assert "BladeFusedCall" not in op_counts(fn) and "SparseSegmentMean" in op_counts(fn)
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


def _with_native_op(cache):
    """``cache``, holding this session's build of the native op (each build is ~9 s of g++; the
    caches under test are the kernels')."""
    from tf_blade.runtime import native
    built = os.path.dirname(native.build())
    shutil.copytree(built, os.path.join(cache, "native", os.path.basename(built)))
    return cache


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


def _runs_parallel(source_path):
    """Whether generated source calls parallel code: a group of parts or a layer's fill that may
    run wide (``fill_wide(..., wide, err)``; without parallel columns it is passed False)."""
    text = open(source_path).read()
    return ".run_group(" in text or re.search(r"fill_wide\(.*, wide, err\)", text) is not None


def test_corrupt_and_read_only_caches_still_serve(tmp_path):
    cache = _with_native_op(tmp_path / "cache")
    _serve(cache)  # fills the cache: generated sources, Numba's machine code
    if parallel_enabled():  # the two columns ran as one layer op, its row blocks in parallel
        assert any(_runs_parallel(p) for p in _kernel_files(str(cache)) if p.endswith(".py"))
    cached = [p for p in _kernel_files(str(cache)) if p.endswith((".nbi", ".nbc"))]
    assert cached, "the first process left no Numba cache"

    for path in _kernel_files(str(cache)):  # truncate everything: sources, indexes, machine code
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 3)
    _serve(cache)  # served, bit-exact, from a cache it had to repair

    blocked = tmp_path / "a_file"  # a cache path that cannot be created (works as root too)
    blocked.write_text("")
    assert "is not writable" in _serve(blocked / "cache")


def _spec_with_load(module, monkeypatch, load):
    """The cluster spec of ``module``'s fused op, with the compiler's module load replaced by
    ``load`` and its cache deletions recorded (the list returned: ``library`` per deletion)."""
    graph = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"].graph.as_graph_def()
    (fused,) = [n for n in running_nodes(graph) if n.op == "BladeFusedCall"]
    cleared = []
    monkeypatch.setattr(compiler, "_load", load)
    monkeypatch.setattr(compiler, "_clear_disk_caches", lambda templates, library: cleared.append(library))
    monkeypatch.setattr(compiler, "_modules", {})
    return fused.attr["cluster"].s.decode(), cleared


@pytest.mark.parametrize("failed_loads", [1, 2])
def test_a_failed_load_clears_the_models_caches_before_the_kernel_librarys(module, monkeypatch, failed_loads):
    # Clearing the library's cache costs every process on the machine a cold compile (~45 s):
    # it goes only when clearing the generated modules' caches was not enough.
    loads = []

    def load(key, source, templates):
        loads.append(key)
        if len(loads) <= failed_loads:
            raise EOFError("a truncated cache file")
        return "module"
    spec, cleared = _spec_with_load(module, monkeypatch, load)
    with pytest.warns(RuntimeWarning, match="clearing its disk cache"):
        assert compiler.load_kernel(spec) == "module"
    assert cleared == [False, True][:failed_loads] and len(loads) == failed_loads + 1


def test_a_compile_error_keeps_the_disk_caches(module, monkeypatch):
    """Numba rejecting a kernel's source says nothing of the cache files: deleting them cost
    every process a cold compile of the library, again at each optimize() of that model."""
    from numba.core.errors import TypingError

    def load(key, source, templates):
        raise TypingError("injected: no implementation of a function")
    spec, cleared = _spec_with_load(module, monkeypatch, load)
    with pytest.raises(TypingError, match="injected"):
        compiler.load_kernel(spec)
    assert cleared == []


def test_without_parallel_columns_results_are_the_same(tmp_path):
    # TF_BLADE_PARALLEL=0 runs a layer's columns one after another, bit-identical
    cache = _with_native_op(tmp_path / "cache")
    _serve(cache, TF_BLADE_PARALLEL="0")
    sources = [p for p in _kernel_files(str(cache)) if p.endswith(".py")]
    serial = {p: open(p).read() for p in _cluster_sources(cache)}
    assert serial and not any(map(_runs_parallel, sources))
    if parallel_enabled():  # a parallel process sharing the cache writes its own module beside
        _serve(cache)       # (its source differs), or the two rewrite and recompile each other's
        parallel = {p: open(p).read() for p in _cluster_sources(cache) if p not in serial}
        assert {p: open(p).read() for p in serial} == serial
        assert len(parallel) == len(serial) and not set(parallel.values()) & set(serial.values())


# A serving process whose kernel cannot be used: the compile callback fails (a broken Numba or
# compiler in production), it hands back an entry point that breaks the op's contract (here
# one that returns success without allocating any output), or one whose first answer differs
# from the original ops' (an output of the wrong shape, or of the right shape but all zeros).
_SERVE_SAVED = textwrap.dedent("""
    import sys
    import numba, numpy as np, tensorflow as tf
    import tf_blade
    from tf_blade.runtime import bridge
    from tf_blade.runtime.abi import ENTRY_SIG, MAX_RANK, call_alloc, ptr_from_int
    native = bridge.native_bridge()
    if sys.argv[2] == "compile":
        def compile_fails(spec, dtypes, ranks):
            raise RuntimeError("injected: LLVM ran out of memory")
        native.set_compile_callback(compile_fails)
    elif sys.argv[2] in ("shape", "values"):
        right_shape = sys.argv[2] == "values"
        @numba.cfunc(ENTRY_SIG)
        def wrong_answer(ins, shapes, ctx, alloc, err):
            dims = np.zeros(MAX_RANK, np.int64)
            if right_shape:  # [batch, 2 columns x dim 4]
                dims[0], dims[1] = shapes[0], 8
            addr = call_alloc(alloc, ctx, 0, 2, dims.ctypes.data)
            if addr != 0 and right_shape:
                numba.carray(ptr_from_int(addr, np.float32), (dims[0] * 8,))[:] = 0.0
            return 0
        native.set_compile_callback(lambda spec, dtypes, ranks: wrong_answer.address)
    else:
        sig = numba.types.int64(*[numba.types.voidptr] * 5)
        allocates_nothing = numba.cfunc(sig)(lambda ins, shapes, ctx, alloc, err: 0)
        native.set_compile_callback(lambda spec, dtypes, ranks: allocates_nothing.address)
    io = np.load(sys.argv[1] + "/io.npz", allow_pickle=True)  # string columns
    serve = tf.saved_model.load(sys.argv[1] + "/model").signatures["serving_default"]
    names = [k for k in io.files if k != "expected"]
    for _ in range(3):
        got = serve(**{n: tf.constant(io[n]) for n in names})["features"].numpy()
        np.testing.assert_array_equal(got, io["expected"])
    print("SERVED", native.fallback_count(), native.compile_count())
""")


@pytest.mark.parametrize("failure", ["compile", "contract", "shape", "values"])
def test_unusable_kernel_in_a_serving_process_runs_the_original_ops(module, tmp_path, rng, failure):
    opt = tf_blade.optimize(module.serve, str(tmp_path / "model"), bridge="native")
    fn = opt.signatures["serving_default"]
    counts = op_counts(fn)
    assert counts["BladeFusedCall"] == 1 and "SparseSegmentMean" not in counts
    raw = synthetic_batch(23, COLUMNS, seed=int(rng.integers(1 << 30)))
    expected = module.serve(*[tf.constant(raw[c]) for c in column_names(COLUMNS)])["features"]
    np.savez(tmp_path / "io.npz", expected=expected.numpy(), **{c: raw[c] for c in column_names(COLUMNS)})
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="1")  # keep warnings, drop info
    result = subprocess.run([sys.executable, "-c", _SERVE_SAVED, str(tmp_path), failure], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "SERVED 1 " in result.stdout, result.stderr[-3000:]
    logged = [line for line in result.stderr.splitlines() if "runs its original TensorFlow ops" in line]
    assert len(logged) == 1, result.stderr[-3000:]  # once, although three requests fell back
    reason = {"compile": "injected: LLVM ran out of memory", "contract": "did not allocate output 0",
              "shape": "its first run differs from the original ops: output 0 is float[0,0]",
              "values": "its first run differs from the original ops: output 0 differs at flat element"}[failure]
    assert reason in logged[0], logged[0]


def test_bad_input_is_still_the_callers_error_and_does_not_fall_back(module, rng):
    opt = tf_blade.optimize(module.serve, bridge="native")
    from tf_blade.runtime.bridge import native_bridge
    before = native_bridge().fallback_count()
    raw = synthetic_batch(5, COLUMNS, seed=int(rng.integers(1 << 30)))
    args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
    args[0] = tf.constant(raw[column_names(COLUMNS)[0]][:3])  # rows disagree between columns
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        module.serve(*args)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        opt.signatures["serving_default"](*args)
    assert error_core(ours.value.message) == error_core(theirs.value.message)
    assert native_bridge().fallback_count() == before


def _outcome(fn, args):
    try:
        return fn(*args)["features"].numpy()
    except tf.errors.OpError as e:
        return type(e)


@pytest.mark.fallback_expected
def test_a_table_of_another_rank_runs_the_original_ops(rng):
    """A variable assigned without shape validation may change rank under a serving model. The
    kernel reads its inputs by the ranks it was compiled for, so for such inputs the op runs
    the original TF ops: TF's answer or TF's error, never the kernel's reading of other bytes."""
    from tf_blade.runtime.bridge import native_bridge
    module = criteo_feature_model(COLUMNS, dim=4)  # its own variables: this test reassigns one
    opt = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    raw = synthetic_batch(6, COLUMNS, seed=int(rng.integers(1 << 30)))
    args = [tf.constant(raw[c]) for c in column_names(COLUMNS)]
    np.testing.assert_array_equal(_outcome(opt, args), _outcome(module.serve, args))
    table = next(v for v in module.variables if v.shape.rank == 2)
    before = native_bridge().fallback_count()
    for value in (tf.reshape(table, [-1, 2, 2]), tf.reshape(table, [-1])):
        tf.raw_ops.AssignVariableOp(resource=table.handle, value=value, validate_shape=False)
        want, got = _outcome(module.serve, args), _outcome(opt, args)
        if isinstance(want, type):
            assert got is want, (want, got)
        else:
            np.testing.assert_array_equal(got, want)
    assert native_bridge().fallback_count() == before + 2  # one dispatch key per rank


def _stamped_library(tmp_path):
    """A kernel library of one kernel that inlines a helper from another file, stamped as
    kernels/__init__.py stamps ours: (its folder, set_helper(value), run() -> the kernel's answer
    in a fresh process)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "__init__.py").write_text("import os\nfrom tf_blade.runtime.cache import stamp_kernel_library\n"
                                     "stamp_kernel_library(os.path.dirname(__file__))\n")
    (lib / "kernel.py").write_text("from numba import njit\nfrom .helper import value\n\n"
                                   "@njit(cache=True)\ndef kernel():\n    return value()\n")
    command = [sys.executable, "-c", "from lib.kernel import kernel; print(kernel(), kernel.stats.cache_hits)"]

    def set_helper(value):
        (lib / "helper.py").write_text("from numba import njit\n\n@njit(inline='always')\n"
                                       f"def value():\n    return {value}\n")

    def run():  # without NUMBA_CACHE_DIR: the library caches into its own __pycache__
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True,
                              env=env).stdout.split()[0]
    return lib, set_helper, run


def test_a_changed_kernel_helper_is_not_served_from_a_stale_disk_cache(tmp_path):
    """Numba stamps a cached function with its own file only; a library kernel that inlines a
    helper from another file must still recompile when that helper changes (kernels/__init__.py
    stamps the whole library)."""
    _, set_helper, run = _stamped_library(tmp_path)
    for value, expected in (("1", "1"), ("1", "1"), ("2", "2")):  # a cache hit, then a changed helper
        set_helper(value)
        assert run() == expected


def test_a_changed_library_caches_into_files_of_its_own(tmp_path):
    """When the library's stamp changes, Numba empties a kernel's index and numbers its data files
    from 1 again, writing the index before the data: under the old names, a process killed
    between the two writes left an index naming the old version's machine code. The stamp is in
    the files' names, and the files of other stamps go."""
    lib, set_helper, run = _stamped_library(tmp_path)

    def cache_files():
        return {p.name for p in (lib / "__pycache__").iterdir() if p.suffix in (".nbi", ".nbc")}
    set_helper(1)
    assert run() == "1"
    first = cache_files()
    set_helper(2)
    assert run() == "2"
    second = cache_files()
    assert len(first) == len(second) == 2 and not first & second, (first, second)


def test_kernel_folders_of_other_versions_go_once_unused_for_a_month(tmp_path, monkeypatch):
    """Each tf_blade or Numba upgrade starts a kernel folder of its own; the old ones are deleted
    once unused for STALE_DAYS, a folder still in use (recent mtime) or not ours is kept."""
    import time
    monkeypatch.setenv("TF_BLADE_CACHE_DIR", str(tmp_path))
    month_ago = time.time() - (compiler.STALE_DAYS + 1) * 86400
    stale, in_use, not_ours = (tmp_path / "kernels" / name for name in ("numba-0.1-aaaa", "numba-0.1-bbbb", "notes"))
    for folder in (stale, in_use, not_ours):
        (folder / "__pycache__").mkdir(parents=True)
        (folder / "k_1.py").write_text("")
    for folder in (stale, not_ours):
        os.utime(folder, (month_ago, month_ago))
    current = compiler._kernel_folder()
    assert not stale.exists() and in_use.exists() and not_ours.exists()
    assert os.path.isdir(current) and os.path.getmtime(current) > month_ago


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the task's exception, printed
@pytest.mark.parametrize("bridge", ["native", "numpy"])
def test_an_allocation_a_kernel_did_not_check_fails_the_op(bridge):
    """A Numba exception inside a part's task (here a MemoryError: Fill to [2**31, 2**31]) was
    printed and dropped by its cfunc wrapper, and the op answered OK with 0 x 0 outputs; TF raises
    ResourceExhaustedError."""
    @tf.function(input_signature=[tf.TensorSpec([2], tf.int64)])
    def f(dims):
        return {"fill": tf.fill(dims, tf.constant(1, tf.int64) + 0)}
    fused = tf_blade.optimize(f, bridge=bridge, min_cluster_size=1).signatures["serving_default"]
    assert fused(tf.constant([2, 3], tf.int64))["fill"].shape == (2, 3)
    for fn in (f, fused):
        with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating"):
            fn(tf.constant([2 ** 31, 2 ** 31], tf.int64))

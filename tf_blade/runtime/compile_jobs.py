"""A cold compile on two cores: a child process compiles some of the tasks while this one compiles the rest.

Numba compiles under one process-wide lock, so a cold start used one core: criteo-fc's three
library tasks (the layer's plan, blocks and direct cfunc) took ~13 s in a row. Tasks missing from
Numba's disk cache can compile in a second Python process instead, which saves them to that
cache; this process then loads them from there. The child imports Numba and the kernel library only (the
kernels need no TensorFlow): ~0.9 s before it starts compiling.

The child only fills the disk cache: whatever happens to it, this process compiles (or loads) every
task itself afterwards, so a failed, killed or slow child costs time, never a result. It is used
when the cache can tell what is missing, two or more tasks are, and this process may run on two
cores or more; ``TF_BLADE_COMPILE_CHILD=0`` turns it off.
"""
from __future__ import annotations

import base64
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

WAIT_S = 600  # a child still compiling after this long is killed; this process compiles its tasks

# Runs in the child: a bare ``tf_blade`` package (its __init__ imports TensorFlow, ~2.5 s) through
# which the kernel library imports as it does here.
_CHILD = """
import base64, os, pickle, sys, types
paths, generated, jobs, claims = pickle.loads(base64.b64decode(sys.argv[1]))
package = types.ModuleType("tf_blade")
package.__path__ = paths["tf_blade"]
sys.modules["tf_blade"] = package
from tf_blade.runtime.compile_jobs import compile_in_child
compile_in_child(paths["tf_blade.kernels"], generated, jobs, claims)
os._exit(0)  # what it compiled is saved; the parent waits for no interpreter teardown (~0.3 s)
"""


def enabled() -> bool:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return os.environ.get("TF_BLADE_COMPILE_CHILD", "1") != "0" and cores >= 2


def missing_from_cache(signature, function) -> bool:
    """Whether Numba's disk cache lacks the cfunc of ``function`` for ``signature`` (False when it
    cannot tell). Reads the function's cache index only: Numba has no public check, so this uses
    the attributes its own load goes through (``Cache._index_key``, the index file)."""
    from .cfunc_cache import new_cfunc
    try:
        compiled = new_cfunc(function, signature, {"nogil": True})
        cache = compiled._cache
        key = cache._index_key(compiled._sig, compiled._targetdescr.target_context.codegen())
        return key not in cache._cache_file._load_index()
    except Exception:
        return False


class Child:
    """A child process compiling ``jobs`` ([(signature, function, symbol)] of module-level
    functions) into Numba's disk cache from the front of the list, while this process takes them
    from the back: each side compiles a job it ``claim``s first (a file created exclusively), so
    the two meet wherever the work splits evenly. As a context: the child is waited for at the
    end (killed past WAIT_S), or killed at once when the block raises."""

    def __init__(self, jobs):
        from .. import kernels
        import tf_blade
        paths = {"tf_blade": list(tf_blade.__path__), "tf_blade.kernels": list(kernels.__path__)}
        self.claims = self.process = None
        try:
            # A generated part's task lives in a module imported from a file (runtime/compiler.py):
            # the child imports it the same way, under the same name.
            generated = {f.__module__: sys.modules[f.__module__].__file__ for _, f, _ in jobs
                         if not f.__module__.startswith("tf_blade.")}
            self.claims = tempfile.mkdtemp(prefix="tf_blade_claims_")
            # the jobs unpickle after the child has mapped the kernels and imported the generated
            # modules (they name functions of both)
            payload = base64.b64encode(pickle.dumps((paths, generated, pickle.dumps(jobs), self.claims))).decode()
            self.process = subprocess.Popen([sys.executable, "-c", _CHILD, payload], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, pickle.PicklingError, AttributeError, TypeError, KeyError):
            pass  # this process compiles them all

    def claim(self, index: int) -> bool:
        return self.process is None or claim(self.claims, index)  # no child: every job is this process's

    def __enter__(self):
        return self

    def __exit__(self, error_type, error, traceback):
        if self.process is not None:
            try:
                self.process.wait(0 if error_type else WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.claims is not None:
            shutil.rmtree(self.claims, ignore_errors=True)


def claim(claims: str, index: int) -> bool:
    """Whether this process is the first to claim job ``index`` in the folder ``claims``."""
    try:
        os.close(os.open(os.path.join(claims, str(index)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False
    except OSError:  # the folder is gone (this side has finished): nothing left to take
        return False


def compile_in_child(kernels_path, generated, jobs, claims) -> None:
    """The child's work: the kernel library imported from ``kernels_path`` as ``tf_blade.kernels``
    (it is installed beside tf_blade, not in it: setup.py's package_dir) and the ``generated``
    modules ({name: file}) the jobs' functions live in, then each job it can claim, from the
    front, compiled as ``compile_task`` does, which saves it to Numba's cache.

    Only the tasks are saved: the jitted functions they call load from the disk cache here (what
    the parent compiled before) but never save to it. Numba's index of a function's compiled
    versions is read, changed and written back without a lock, so two processes saving versions
    of one function at once could leave an entry naming the other's code; only this process's
    parent writes those. (Numba replaces an index file whole, so a read never sees half of one.)"""
    from numba.core import dispatcher

    from .modules import import_file
    enable_caching = dispatcher.Dispatcher.enable_caching

    def load_only(self):
        enable_caching(self)
        self._cache.save_overload = lambda sig, data: None

    dispatcher.Dispatcher.enable_caching = load_only  # before any kernel is decorated
    import_file("tf_blade.kernels", os.path.join(kernels_path[0], "__init__.py"), kernels_path)
    for name, path in generated.items():
        import_file(name, path)
    from tf_blade.kernels.parallel import compile_task
    for index, (signature, function, symbol) in enumerate(pickle.loads(jobs)):
        if claim(claims, index):
            compile_task(signature, function, symbol)

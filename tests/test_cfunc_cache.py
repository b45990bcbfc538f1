"""cached_cfunc (tf_blade/runtime/cfunc_cache.py), in fresh processes sharing one empty Numba cache:
the first compiles and saves, the second loads without Numba's refresh of its target context and
gets the same function; one missing from the cache still compiles. And what makes the load safe:
after prepare_load, Numba's refresh installs no C symbol that cached code could need."""
import json
import os
import subprocess
import sys

import pytest

import tf_blade
from tf_blade.runtime.cfunc_cache import LOADS_WITHOUT_REFRESH

FUNCTIONS = """
import numpy as np


def total(n):  # allocates: the loaded code links to the NRT
    return np.arange(n).sum()


def square(n):
    return n * n
"""

# A bare tf_blade package: the loader needs no TensorFlow (its import would cost seconds a run).
BARE_PACKAGE = """
import json, sys, types as py_types
package = py_types.ModuleType("tf_blade")
package.__path__ = [sys.argv[1]]
sys.modules["tf_blade"] = package
"""
SCRIPT = BARE_PACKAGE + """
from numba import types
from numba.core import base
refreshes = []
original = base.BaseContext.refresh
base.BaseContext.refresh = lambda self: (refreshes.append(1), original(self))[1]
import functions
from tf_blade.runtime.cfunc_cache import cached_cfunc
names = sys.argv[2:]
compiled = {name: cached_cfunc(types.int64(types.int64), nogil=True)(getattr(functions, name)) for name in names}
print(json.dumps({"results": {name: f.ctypes(10) for name, f in compiled.items()},
                  "hits": {name: f.cache_hits for name, f in compiled.items()}, "refreshes": len(refreshes)}))
"""


# Every C symbol handed to LLVM after prepare_load, by the refresh.
SYMBOLS = BARE_PACKAGE + """
import llvmlite.binding as ll
from numba.core.registry import cpu_target
from tf_blade.runtime.cfunc_cache import prepare_load
added, add_symbol = [], ll.add_symbol
ll.add_symbol = lambda name, address: (added.append(name), add_symbol(name, address))[1]
context = cpu_target.target_context
prepare_load(context)
before = len(added)
context.refresh()
print(json.dumps(added[before:]))
"""


def _run(tmp_path, *names, script=SCRIPT):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script, tf_blade.__path__[0], *names], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not LOADS_WITHOUT_REFRESH, reason="a Numba version not checked for loads without a refresh")
def test_a_cached_cfunc_loads_without_a_refresh_and_a_missing_one_compiles(tmp_path):
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    cold = _run(tmp_path, "total")
    assert cold["results"] == {"total": 45} and cold["hits"] == {"total": 0} and cold["refreshes"] > 0
    warm = _run(tmp_path, "total")
    assert warm == {"results": {"total": 45}, "hits": {"total": 1}, "refreshes": 0}
    mixed = _run(tmp_path, "total", "square")  # loads one, then refreshes to compile the other
    assert mixed["results"] == {"total": 45, "square": 100} and mixed["hits"] == {"total": 1, "square": 0}
    assert mixed["refreshes"] > 0


@pytest.mark.skipif(not LOADS_WITHOUT_REFRESH, reason="a Numba version not checked for loads without a refresh")
def test_after_prepare_load_the_refresh_installs_no_symbol(tmp_path):
    """Fails when the Numba in use installs a new C symbol in its refresh: cached code linking to it
    would abort a process that loads without refreshing. The check for a new Numba version: add
    it to CHECKED_VERSIONS and run this (if it fails, add that symbol's source to prepare_load)."""
    assert _run(tmp_path, script=SYMBOLS) == []

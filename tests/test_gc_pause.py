"""The cyclic GC is paused while Numba compiles (tf_blade/runtime/gc_pause.py), and the caller's
setting comes back after, also when the compile fails or pauses overlap across threads."""
import gc

import numba
import numpy as np
import pytest
from numba.core import errors, sigutils
from numba.core.ccallback import CFunc
from numba.extending import overload

import tf_blade.kernels  # noqa: F401  (installs the pause)
from tf_blade.runtime import cfunc_cache, gc_pause

_seen = []  # gc.isenabled() each time Numba types a call of probe (once per argument type)


def probe(x):
    return x


@overload(probe)
def _probe_typing(x):
    _seen.append(gc.isenabled())
    if isinstance(x, numba.types.Float):
        raise errors.TypingError("probe takes integers")  # a compile that fails
    return lambda x: x + 1


@pytest.fixture
def seen():
    _seen.clear()
    gc.enable()
    yield _seen
    gc.enable()


@pytest.mark.parametrize("enabled_before, dtype", [(True, np.int64), (False, np.int32)])
def test_a_jit_compile_runs_with_the_collector_paused(seen, enabled_before, dtype):
    (gc.enable if enabled_before else gc.disable)()

    @numba.njit
    def calls_probe(x):
        return probe(x)

    assert calls_probe(dtype(2)) == 3
    assert seen == [False]
    assert gc.isenabled() is enabled_before


def test_a_cfunc_compile_runs_with_the_collector_paused(seen, monkeypatch):
    # compiled every time: Numba's disk cache would skip the typing
    monkeypatch.setattr(cfunc_cache, "LOADS_WITHOUT_REFRESH", False)
    monkeypatch.setattr(cfunc_cache, "new_cfunc", lambda function, signature, options: CFunc(
        function, sigutils.normalize_signature(signature), locals={}, options=options))

    def calls_probe(x):
        return probe(x)

    compiled = cfunc_cache.cached_cfunc("int16(int16)")(calls_probe)
    assert compiled.ctypes(41) == 42
    assert seen == [False]
    assert gc.isenabled()


def test_a_failed_compile_turns_the_collector_back_on(seen):
    @numba.njit
    def calls_probe(x):
        return probe(x)

    with pytest.raises(errors.TypingError):
        calls_probe(1.5)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_overlapping_pauses_keep_the_collector_off_until_the_last_ends(seen):
    """Two threads' pauses (a cfunc compile, another thread's optimize()) need not nest: the
    collector stays off until both have ended, then comes back on."""
    first, second = gc_pause.paused(), gc_pause.paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second is still open
    second.__exit__(None, None, None)
    assert gc.isenabled()

"""``numba.cfunc(signature, cache=True)`` whose load from Numba's disk cache skips Numba's refresh.

Numba refreshes its target context before every load from its cache. The first refresh imports
~60 of Numba's modules and installs their typing and lowering registries: ~0.1 s of a warm
optimize() of criteo-fc (0.57 -> 0.47 s, fresh processes in turn). The registries serve
compiling. Cached machine code needs only the C symbols it links to. In Numba 0.68 the context's
start installs all of them but two sets: the NRT's (``rtsys.initialize``, which the refresh
calls) and the hash secrets (installed when ``numba.cpython.hashing`` is imported, which the
refresh does). Generated code uses no Numba parallel layer (its parallel work runs on TF's
threads, kernels/parallel.py). A symbol missing at link time
aborts the process ("LLVM ERROR: Symbol not found"), so this path is limited to the Numba
versions checked for it: tests/test_cfunc_cache.py checks that, after ``prepare_load``, a
refresh installs no symbol. A function missing from the cache compiles, and Numba's compile
refreshes first.

The load replaces the public ``load_overload`` of the CFunc's cache (its private ``_cache``) with
one calling its private ``_load_overload``; it leaves out Numba's guard against spurious I/O
errors, which acts on Windows only.
"""
import importlib

import numba
from numba.core import sigutils
from numba.core.ccallback import CFunc
from numba.core.runtime import rtsys

from .gc_pause import paused

# Numba versions whose refresh installs no C symbol beyond those prepare_load installs.
CHECKED_VERSIONS = ("0.68",)
LOADS_WITHOUT_REFRESH = ".".join(numba.__version__.split(".")[:2]) in CHECKED_VERSIONS


def prepare_load(target_context) -> None:
    """Installs the C symbols that Numba's refresh would have installed before a load."""
    rtsys.initialize(target_context)  # the NRT's
    importlib.import_module("numba.cpython.hashing")  # the hash secrets; ~8 ms


def new_cfunc(function, signature, options) -> CFunc:
    """The CFunc ``numba.cfunc(signature, cache=True, **options)`` makes, not compiled yet."""
    compiled = CFunc(function, sigutils.normalize_signature(signature), locals={}, options=options)
    compiled.enable_caching()
    return compiled


def cached_cfunc(signature, **options):
    """A decorator: ``function`` as a CFunc of ``signature``, loaded from Numba's disk cache or
    compiled and saved there (what ``numba.cfunc(signature, cache=True, **options)`` does)."""
    def decorate(function) -> CFunc:
        compiled = new_cfunc(function, signature, options)
        if LOADS_WITHOUT_REFRESH:
            cache = compiled._cache

            def load(sig, target_context):
                prepare_load(target_context)
                return cache._load_overload(sig, target_context)

            cache.load_overload = load
        with paused():  # a cfunc's compile fires no numba:compile event (gc_pause.install)
            compiled.compile()
        return compiled
    return decorate

"""Cluster spec -> compiled kernel module, cached in memory and on disk.

Generated source is written to ``<cache>/kernels/<numba version>/k_<key>.py`` (Numba can only
cache functions that live in a real file) and imported; ``cache=True`` then lets Numba reload the
machine code from that file's ``__pycache__`` in later processes. A spec fixes its input dtypes
and ranks, never shapes, so one compile serves every batch size.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings

import numba

from ..codegen.generate import generate
from ..kernels.bag_layer import compiling_wanted
from .cache import cache_root, source_digest
from .modules import import_file
from .threads import parallel_enabled

_modules = {}
_lock = threading.RLock()
compile_count = 0   # kernels generated and loaded in this process (tests count recompiles)


def spec_key(spec_text: str) -> str:
    return hashlib.sha256(spec_text.encode()).hexdigest()[:20]


def load_kernel(spec_text: str):
    """Returns the generated module for ``spec_text``: ``body`` for NumPy, ``entry`` for C."""
    global compile_count
    # The source also follows parallel_enabled() (TF_BLADE_PARALLEL): processes configured
    # otherwise that share a cache must not rewrite each other's module and recompile it.
    key = spec_key(spec_text) + ("" if parallel_enabled() else "_serial")
    with _lock:
        module = _modules.get(key)
        if module is None:
            source, templates = generate(json.loads(spec_text))
            # The library tasks the lowerings asked for compile together, two at a time when cold;
            # this process compiles the cluster's own code (its entry) before its share of them.
            with compiling_wanted():
                module = _load_or_retry(key, source, templates)
            _modules[key] = module
            compile_count += 1
        return module


def _load_or_retry(key, source, templates):
    """``_load``, again after clearing the disk caches a failed load may have read."""
    try:
        return _load(key, source, templates)
    except numba.core.errors.NumbaError:
        raise  # Numba rejected the source: no cache file is at fault, and deleting them
               # would cost every process on the machine a cold compile, at each optimize()
    except Exception as e:
        # A truncated or foreign Numba cache file fails the load; drop the disk caches and compile
        # from source again. The generated modules' caches go first: the kernel library's (a cold
        # compile of ~45 s for every process on the machine) only if that was not enough.
        warnings.warn(f"tf_blade: loading kernel {key} failed ({type(e).__name__}: {e}); "
                      "clearing its disk cache and compiling again", RuntimeWarning)
        _clear_disk_caches(templates, library=False)
        try:
            return _load(key, source, templates)
        except Exception:
            _clear_disk_caches(templates, library=True)
            return _load(key, source, templates)


def _load(key, source, templates):
    for name, template in templates.items():  # shared across clusters: load once
        if name not in sys.modules:
            import_file(name, _write_source(name, template))
    return import_file(f"tf_blade_kernel_{key}", _write_source(f"k_{key}", source))


def _clear_disk_caches(templates, library: bool):
    """Deletes Numba's cache files of the generated modules, and with ``library`` those of the
    kernel library's folder too."""
    from .. import kernels
    for name in templates:
        sys.modules.pop(name, None)
    for folder in [_kernel_folder()] + ([os.path.dirname(kernels.__file__)] if library else []):
        pycache = os.path.join(folder, "__pycache__")
        for entry in os.listdir(pycache) if os.path.isdir(pycache) else ():
            if entry.endswith((".nbi", ".nbc")):
                try:
                    os.remove(os.path.join(pycache, entry))
                except OSError:
                    pass


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of every source a generated kernel links in. Numba's disk cache checks only the
    generated file itself, so a changed kernel must change the folder the file lives in."""
    from .. import codegen, feature_column, kernels
    folders = [os.path.dirname(package.__file__) for package in (kernels, codegen, feature_column)]
    return source_digest(folders, [os.path.join(os.path.dirname(__file__), "abi.py")],
                         numba.__version__.encode())[:12]


def _kernel_folder() -> str:
    folder = os.path.join(cache_root(), "kernels", f"numba-{numba.__version__}-{code_version()}")
    _prune_other_versions(folder)
    return folder


STALE_DAYS = 30


@functools.lru_cache(maxsize=None)
def _prune_other_versions(folder: str) -> None:
    """Once a process: marks ``folder`` used (its mtime) and deletes the kernel folders of other
    code versions not used for STALE_DAYS. Every tf_blade or Numba upgrade starts a new folder
    (tens of MB of generated modules and machine code each), and nothing else removes the old
    ones. A version still in use elsewhere touches its folder at each process start."""
    parent = os.path.dirname(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        os.utime(folder)
        cutoff = time.time() - STALE_DAYS * 86400
        for name in os.listdir(parent):
            path = os.path.join(parent, name)
            if name.startswith("numba-") and path != folder and os.path.isdir(path) and os.path.getmtime(path) < cutoff:
                shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass  # a cache we cannot tidy still serves


def _write_source(stem: str, source: str) -> str:
    folder = _kernel_folder()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{stem}.py")
    try:
        with open(path) as f:
            if f.read() == source:
                return path  # unchanged: keep its mtime so Numba's disk cache stays valid
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(suffix=".py.tmp", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    os.replace(tmp, path)
    return path

"""Build and load the BladeFusedCall op (blade_op.cc).

The .so is compiled once per (TF version, source, flags) into a cache dir and
loaded twice: via tf.load_op_library (registers the op, gives the Python
wrapper) and via ctypes (reaches the exported C functions of the same image).
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import tensorflow as tf

from .cache import cache_root

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blade_op.cc")

_COMPILE_CB_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_uint64,  # entry address, 0 on failure
    ctypes.c_void_p, ctypes.c_int64,  # spec, spec_len
    ctypes.c_int64,  # n_in
    ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),  # dtypes, ranks
    ctypes.c_void_p, ctypes.c_int64,  # err, err_len
)


class NativeBridgeUnavailable(RuntimeError):
    """The native op could not be built or loaded; callers should fall back."""


def _flags():
    return (["-std=c++17", "-shared", "-fPIC", "-O2"]
            + tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags())


def build():
    """Return the path of the compiled .so, building it if needed."""
    if sys.byteorder != "little":  # kernels/strings.py reads TF's tstrings as laid out on LE hosts
        raise NativeBridgeUnavailable("tf_blade: the native op supports little-endian hosts only")
    flags = _flags()
    with open(_SRC, "rb") as f:
        src = f.read()
    digest = hashlib.sha256(src + "\0".join(flags).encode()).hexdigest()[:16]
    out_dir = os.path.join(cache_root(), "native", f"{tf.__version__}-{digest}")
    so = os.path.join(out_dir, "blade_op.so")
    if os.path.exists(so):
        return so
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        raise NativeBridgeUnavailable("tf_blade: g++ not found; cannot build blade_op.so")
    os.makedirs(out_dir, exist_ok=True)
    # Unique temp name in the same dir + os.replace: concurrent builders never
    # expose a half-written .so, and the last one to finish wins harmlessly.
    fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=out_dir)
    os.close(fd)
    try:
        proc = subprocess.run([cxx, _SRC, "-o", tmp] + flags,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise NativeBridgeUnavailable(
                f"tf_blade: building blade_op.so failed ({proc.returncode}):\n{proc.stdout}")
        os.replace(tmp, so)
    except OSError as e:
        raise NativeBridgeUnavailable(f"tf_blade: building blade_op.so failed: {e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return so


class NativeBridge:
    def __init__(self, so_path):
        self.path = so_path
        self.module = tf.load_op_library(so_path)
        lib = ctypes.CDLL(so_path)  # dlopen of the same path -> same image/globals
        lib.blade_set_compile_callback.argtypes = [ctypes.c_void_p]
        lib.blade_set_compile_callback.restype = None
        lib.blade_alloc_address.restype = ctypes.c_void_p
        lib.blade_cache_size.restype = ctypes.c_int64
        lib.blade_compile_count.restype = ctypes.c_int64
        lib.blade_fallback_count.restype = ctypes.c_int64
        lib.blade_crowded_count.restype = ctypes.c_int64
        lib.blade_parallel_for_address.restype = ctypes.c_void_p
        lib.blade_run_tasks_address.restype = ctypes.c_void_p
        lib.blade_register_cluster.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64]
        lib.blade_register_cluster.restype = None
        self._lib = lib
        self.alloc_address = lib.blade_alloc_address()
        from ..kernels.parallel import install_runners
        install_runners(lib.blade_parallel_for_address(), lib.blade_run_tasks_address())
        self._cb = None  # keeps the ctypes thunk alive while C++ holds it

    def set_compile_callback(self, fn):
        """fn(spec: bytes, in_dtypes: list[int], in_ranks: list[int]) -> entry address."""

        def thunk(spec, spec_len, n_in, dtypes, ranks, err, err_len):
            try:
                addr = int(fn(ctypes.string_at(spec, spec_len),
                              dtypes[:n_in], ranks[:n_in]))
                if addr == 0:
                    raise RuntimeError("compile callback returned a null address")
                return addr
            except BaseException as e:  # never let an exception cross into C++
                msg = f"{type(e).__name__}: {e}".encode("utf-8", "replace")
                msg = msg[: max(err_len - 1, 0)]
                ctypes.memmove(err, msg + b"\0", len(msg) + 1)
                return 0

        cb = _COMPILE_CB_TYPE(thunk)
        self._cb = cb
        self._lib.blade_set_compile_callback(ctypes.cast(cb, ctypes.c_void_p))

    def register_cluster(self, key: bytes, spec: bytes):
        """Gives the spec of cluster ``key`` to BladeFusedCall ops of this process whose
        ``cluster`` attr is empty (the fast call's eager op: tf_blade/fast_call.py)."""
        self._lib.blade_register_cluster(key, len(key), spec, len(spec))

    def compile_count(self):
        return self._lib.blade_compile_count()

    def cache_size(self):
        return self._lib.blade_cache_size()

    def fallback_count(self):
        """Dispatch keys now running their cluster's original TF ops."""
        return self._lib.blade_fallback_count()

    def crowded_count(self):
        """Fused calls told that others ran beside them (or overlapped within 50 ms), which then
        ran their columns on their own thread."""
        return self._lib.blade_crowded_count()


_bridge = None
_lock = threading.Lock()


def load():
    """Build (if needed) and load the native bridge once per process."""
    global _bridge
    with _lock:
        if _bridge is None:
            so = build()
            try:
                _bridge = NativeBridge(so)
            except (tf.errors.OpError, OSError) as e:
                raise NativeBridgeUnavailable(f"tf_blade: loading {so} failed: {e}") from e
        return _bridge

"""Whether generated kernels may run independent parts (the columns of a layer) in parallel.

A fused feature layer runs its row blocks on TF's own intra-op threads (kernels/parallel.py);
groups of column parts use Numba's ``prange`` on its TBB threading layer: the only Numba layer that is
safe when many TensorFlow threads enter kernels at once (the workqueue layer aborts on concurrent
entry by design; the OpenMP layer crashed our 8-thread test). The ``tbb`` wheel puts libtbb in
``<prefix>/lib``, which a virtualenv's loader does not search, so it is loaded here by path before
Numba looks for it. Without TBB, or with TF_BLADE_PARALLEL=0, kernels run parts one after another.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import warnings


def _libtbb_candidates():
    try:
        from importlib import metadata
        for f in metadata.files("tbb") or ():
            if f.name.startswith("libtbb.so"):
                yield str(f.locate())
    except Exception:  # no tbb distribution: the system's libtbb may still be there
        pass
    yield os.path.join(sys.prefix, "lib", "libtbb.so.12")
    yield "libtbb.so.12"


@functools.lru_cache(maxsize=1)
def parallel_enabled() -> bool:
    if os.environ.get("TF_BLADE_PARALLEL", "1") == "0":
        return False
    from numba.np.ufunc import parallel
    if parallel._is_initialized:  # someone launched Numba's threads first: keep theirs if TBB
        import numba
        if numba.threading_layer() == "tbb":
            return True
        warnings.warn(f"tf_blade: Numba's threading layer was started as {numba.threading_layer()!r} before "
                      "tf_blade was imported; fused kernels run their columns on one thread (import "
                      "tf_blade first to get parallel columns)", RuntimeWarning)
        return False
    for path in _libtbb_candidates():
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError:
            continue
    try:
        from numba.np.ufunc import tbbpool  # noqa: F401  (fails when libtbb is missing)
        parallel._check_tbb_version_compatible()
    except Exception as e:
        warnings.warn(f"tf_blade: Numba's TBB threading layer is unavailable ({e}); fused kernels "
                      "run their columns on one thread (pip install tbb to enable parallel columns)")
        return False
    import numba
    numba.config.THREADING_LAYER = "tbb"
    # Launch now: a kernel loaded from Numba's disk cache links against the threading layer's
    # entry points but, when it is a cfunc, nothing launches the layer for it (a null call).
    parallel._launch_threads()
    return numba.threading_layer() == "tbb"

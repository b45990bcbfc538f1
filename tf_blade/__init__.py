"""tf_blade: fuses the sparse feature-column subgraphs of TensorFlow recommendation models into
Numba-generated kernels called through a native, GIL-free TensorFlow op."""
import os as _os
import sys as _sys

from .runtime.modules import import_file as _import_file


def _map_source_subpackages():
    """kernels/, feature_column/ and benchmarks/ sit beside this package in the source tree; setup.py's
    package_dir installs them as tf_blade.kernels / .feature_column / .benchmarks. When tf_blade is
    imported straight from a checkout (``python -m pytest`` in the repo), map them the same way."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    for name in ("kernels", "feature_column", "benchmarks"):
        full = f"{__name__}.{name}"
        folder = _os.path.join(_os.path.dirname(here), name)
        if full in _sys.modules or _os.path.isdir(_os.path.join(here, name)) or not _os.path.isdir(folder):
            continue
        globals()[name] = _import_file(full, _os.path.join(folder, "__init__.py"), [folder])


_map_source_subpackages()
from .api import OptimizedModel, function, load, optimize  # noqa: F401
from .report import Report  # noqa: F401
from .runtime.bridge import native_bridge as _native_bridge
from .runtime.bridge import register_gradients as _register_gradients

__version__ = "0.1.0"

# Registers BladeFusedCall (building it on first use) so optimized SavedModels load after
# ``import tf_blade``; without a compiler this warns and optimize() uses numpy_function.
_native_bridge()
_register_gradients()

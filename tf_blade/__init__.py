"""tf_blade: fuses the sparse feature-column subgraphs of TensorFlow recommendation models into
Numba-generated kernels called through a native, GIL-free TensorFlow op."""
from .api import OptimizedModel, function, optimize  # noqa: F401
from .report import Report  # noqa: F401
from .runtime.bridge import native_bridge as _native_bridge

__version__ = "0.1.0"

# Registers BladeFusedCall (building it on first use) so optimized SavedModels load after
# ``import tf_blade``; without a compiler this warns and optimize() uses numpy_function.
_native_bridge()

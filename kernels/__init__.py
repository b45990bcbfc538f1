"""Numba kernels, one TF op (or fused family) per file. NumPy in, NumPy out, no TensorFlow.

Conventions shared by every kernel:
- A kernel that can reject its input takes ``err`` (a uint8 array, see ``errors.py``) last; on bad
  input it writes TensorFlow's message there with ``set_error`` and returns empty arrays of the
  right type. Callers check ``err[0]`` before using the results.
- Kernels validate every index before they touch memory: they index raw buffers.
- A rank-0 tensor travels as a shape-(1,) array; the code generator tracks the true rank.
"""
import os as _os

# Before any kernel below is decorated: their disk cache must check the whole library, not
# each kernel's own file (kernels inline helpers from other files).

from ..runtime import abi as _abi
from ..runtime import gc_pause as _gc_pause
from ..runtime import numba_inline as _numba_inline
from ..runtime.cache import stamp_kernel_library as _stamp_kernel_library

_stamp_kernel_library(_os.path.dirname(__file__), [_abi.__file__])
_gc_pause.install()  # a compile's garbage waits for its end: with TF imported, ~10% of compiling
_numba_inline.install()  # kernels inline large helpers: Numba's copy of their IR, once per block, cost ~1 s a task

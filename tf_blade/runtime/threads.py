"""Whether generated kernels may run independent work (a layer's row blocks, a step's column
parts) in parallel. They do so on TensorFlow's own intra-op threads, through the native op
(kernels/parallel.py); with TF_BLADE_PARALLEL=0 every kernel runs on its caller's thread. A
process reads the setting once: the generated source follows it (runtime/compiler.py).
"""
import functools
import os


@functools.lru_cache(maxsize=1)
def parallel_enabled() -> bool:
    return os.environ.get("TF_BLADE_PARALLEL", "1") != "0"

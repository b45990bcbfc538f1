"""Keep per-call kernel buffers in the process: raise glibc malloc's mmap and trim thresholds.

A fused kernel allocates and frees buffers of 100 KB to a few MB on every call (the columns'
intermediate ids, the per-table outputs). glibc serves blocks above its
mmap threshold (128 KB, adjusted only by a heuristic) with a fresh mmap(), and gives the free top of
an arena back to the OS past its trim threshold, so each call page-faults its buffers in again.
Measured on criteo-fc at batch 4096 (docs/architecture.md): the kernel took 8.0 ms with glibc's
defaults and 5.3 ms with these thresholds; TF's own time did not change.

The cost is that up to the trim threshold of freed memory per malloc arena stays mapped instead of
going back to the OS. TF_BLADE_MALLOC_TUNING=0 keeps glibc's defaults; other C libraries are left
alone.
"""
import ctypes
import functools
import os

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit
TRIM_THRESHOLD = 64 << 20


@functools.lru_cache(maxsize=1)
def tune_malloc() -> bool:
    """Apply the thresholds once per process; True if they were applied."""
    if os.environ.get("TF_BLADE_MALLOC_TUNING", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # not glibc: its mallopt means something else
            return False
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (OSError, AttributeError):
        return False

"""Where tf_blade keeps what it builds: the native op and generated kernel modules.

A cache directory that cannot be written (read-only volume, wrong owner) is not fatal: tf_blade
warns once and builds into a private temporary directory for this process instead.
"""
import functools
import os
import tempfile
import warnings


def cache_root() -> str:
    root = os.environ.get("TF_BLADE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tf_blade")
    return root if _writable(root) else _private_root(root)


@functools.lru_cache(maxsize=None)
def _writable(root: str) -> bool:
    try:
        os.makedirs(root, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root):
            return True
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def _private_root(root: str) -> str:
    private = tempfile.mkdtemp(prefix="tf_blade_cache_")
    warnings.warn(f"tf_blade: cache directory {root} is not writable; building into {private} "
                  "for this process (set TF_BLADE_CACHE_DIR to a writable directory to keep kernels)",
                  RuntimeWarning)
    return private

"""Where tf_blade keeps what it builds: the native op and generated kernel modules."""
import os


def cache_root() -> str:
    return os.environ.get("TF_BLADE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tf_blade")

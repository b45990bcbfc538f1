"""Importing a module from a file by name: the source tree's kernel packages, the generated
kernels and a compile child's kernel library. Standard library only: tf_blade's __init__ and the
compile child (which has no TensorFlow) use it before anything else is imported."""
import importlib.util
import sys


def import_file(name: str, path: str, package_dirs=None):
    """Imports ``path`` as module ``name`` (a package searching ``package_dirs`` when given). It is
    in sys.modules before its code runs: Numba's disk cache names a module's functions by it."""
    if package_dirs is None:
        spec = importlib.util.spec_from_file_location(name, path)
    else:
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=package_dirs)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

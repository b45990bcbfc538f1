"""Where tf_blade keeps what it builds: the native op and generated kernel modules.

A cache directory that cannot be written (read-only volume, wrong owner) is not fatal: tf_blade
warns once and builds into a private temporary directory for this process instead.
"""
import functools
import hashlib
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


def source_digest(folders, files=(), salt: bytes = b"") -> str:
    """sha256 (hex) of ``salt``, every .py file under ``folders`` (walked in sorted order) and
    ``files``: what a compiled kernel's validity depends on."""
    digest = hashlib.sha256(salt)
    paths = [os.path.join(folder, name) for root in folders for folder, _, names in sorted(os.walk(root))
             for name in sorted(names) if name.endswith(".py")]
    for path in paths + list(files):
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


class _LibraryStamp:
    """The locators stamp_kernel_library installs for ``directory`` (a second call for the same
    directory replaces them)."""
    directory = None


def stamp_kernel_library(kernels_dir: str, extra_files=()) -> None:
    """Makes Numba's disk cache of the kernel library (``kernels_dir``) check the whole library.

    Numba stamps a cached function with its own file's contents only, but kernels inline helpers
    from other files (``strings.string_at`` into every string kernel): a changed helper left the
    old machine code in use. For functions defined in ``kernels_dir`` the stamp becomes the hash of
    every ``.py`` file there plus ``extra_files`` and Numba's version. Called by
    ``kernels/__init__.py`` before any kernel is decorated (Numba picks a function's cache locator
    when it is decorated).

    The stamp is also in the cache files' names, and the files of other stamps in the folder go
    when the first kernel's cache opens it. Numba keeps one index and numbered data files per
    function: when the stamp changes it empties the index and numbers data files from 1 again,
    over the old version's, writing the index first. A process killed between the two writes
    would have left an index naming the old version's machine code for the new source.
    """
    from numba.core import caching
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)  # renamed in 0.60
    if impl is None or not hasattr(caching, "InTreeCacheLocator"):  # its own per-file stamps stay
        return
    import numba
    kernels_dir = os.path.abspath(kernels_dir)
    # Numba's version too: another version's index also reads as empty, and its data files would
    # be numbered over as a changed library's are (below)
    stamp = source_digest([kernels_dir], extra_files, numba.__version__.encode())
    tag = "-" + stamp[:STAMP_CHARS]  # ends the disambiguator in each cache file's name

    class LibraryStamp(_LibraryStamp):
        directory = kernels_dir

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != kernels_dir:
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return stamp

        def get_disambiguator(self):
            return super().get_disambiguator() + tag

        def ensure_cache_path(self):
            super().ensure_cache_path()
            _remove_other_stamps(self.get_cache_path(), tag)

    class UserProvided(LibraryStamp, caching.UserProvidedCacheLocator):  # NUMBA_CACHE_DIR, as Numba's order
        pass

    class InTree(LibraryStamp, caching.InTreeCacheLocator):
        pass

    class UserWide(LibraryStamp, caching.UserWideCacheLocator):  # when the package's folder is read-only
        pass

    kept = [c for c in impl._locator_classes if getattr(c, "directory", None) != kernels_dir]
    impl._locator_classes = [UserProvided, InTree, UserWide] + kept


STAMP_CHARS = 12  # of the library's stamp in its cache files' names


@functools.lru_cache(maxsize=None)
def _remove_other_stamps(folder: str, tag: str) -> None:
    """Once a process and folder: deletes the kernel library's Numba cache files in ``folder``
    (which holds the library's only) whose disambiguator does not end in this stamp's ``tag``
    (Numba's names: <function>-<disambiguator>.py<version>...)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.endswith((".nbi", ".nbc")) and tag + ".py" not in name:
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass  # gone already, or not ours to delete: it is never read under this stamp

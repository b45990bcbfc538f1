"""Python's cyclic garbage collector paused while Numba compiles and while optimize() rewrites.

A compile allocates hundreds of thousands of small objects (Numba's IR and types, llvmlite's IR),
and every 700 net allocations start a collection, a few in a thousand of them a full one (24 of
6,000 in tests/test_kernel_gather.py). In a process that has imported TensorFlow a full collection
walks 0.36-0.65M objects (~0.25 s), and most of what a compile makes lives until it ends; what it
leaves behind is collected after it instead. Measured: the collector took 0.65 of 5.4 s of
compiling the feature layer's direct cfunc and plan after ``import tf_blade``, and 0.87 of 11.2 s
of the layer's three tasks in a process set up as the compile child is (no TensorFlow), which
peaked at 297 MB paused against 237 MB. tests/test_kernel_gather.py, fresh caches, in turn:
64.1/64.4 s paused, 66.8/68.6 s not (the collector 2.7 against 6.9 s).

``install`` pauses it through each CPU dispatcher compile (Numba's ``numba:compile`` event, any
Numba code in the process; numba.cuda's compiles fire none), ``cached_cfunc`` around each cfunc
compile (which fires no event either), and optimize() around its passes (``paused``). Pauses nest
and overlap across threads: the collector is off while any is open, and the first one's setting
comes back when the last one closes.
"""
import contextlib
import gc
import threading

from numba.core import event

_lock = threading.Lock()
_open = 0            # pauses open now, in every thread
_was_enabled = False  # the collector's setting when the first of them opened


def _pause() -> None:
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _open += 1


def _resume() -> None:
    global _open
    with _lock:
        if _open == 0:  # an end whose start came before install()
            return
        _open -= 1
        if _open == 0 and _was_enabled:
            gc.enable()


@contextlib.contextmanager
def paused():
    """The cyclic collector off for the block (and for as long as another pause is open)."""
    _pause()
    try:
        yield
    finally:
        _resume()


class _PausedWhileCompiling(event.Listener):
    def on_start(self, ev):
        _pause()

    def on_end(self, ev):
        _resume()


_listener = None


def install() -> None:
    """Registers the compile listener once."""
    global _listener
    if _listener is None:
        _listener = _PausedWhileCompiling()
        event.register("numba:compile", _listener)

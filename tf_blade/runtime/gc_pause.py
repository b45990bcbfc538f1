"""Python's cyclic garbage collector paused while Numba compiles and while optimize() rewrites.

A compile allocates hundreds of thousands of small objects (Numba's IR and types, llvmlite's IR),
and every 700 net allocations start a collection, a few in a thousand of them a full one (24 of
6,000 in tests/test_kernel_gather.py). In a process that has imported TensorFlow a full collection
walks 0.36-0.65M objects (~0.25 s), and little a compile makes can be freed before it ends.
Measured: the collector took 0.65 of 5.4 s of compiling the feature layer's direct cfunc and plan
after ``import tf_blade``, and 0.87 of 11.2 s of the layer's three tasks in the compile child
(which peaked at 297 MB paused, 237 MB not). tests/test_kernel_gather.py, fresh caches, in turn:
64.1/64.4 s paused, 66.8/68.6 s not (the collector 2.7 against 6.9 s).

``install`` pauses it from the start of each outermost Numba dispatcher compile to its end (the
``numba:compile`` event, any Numba code in the process); ``cached_cfunc`` pauses it around a
cfunc's compile, which fires no event; ``paused`` is the context both use.
"""
import contextlib
import gc

from numba.core import event


@contextlib.contextmanager
def paused():
    """The cyclic collector off for the block; on again after it if it was on before it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _PausedWhileCompiling(event.Listener):
    """Start and end events nest, and come from one thread at a time: Numba compiles under its
    process-wide lock."""

    def __init__(self):
        self.was_enabled = []

    def on_start(self, ev):
        self.was_enabled.append(gc.isenabled())
        gc.disable()

    def on_end(self, ev):
        if self.was_enabled.pop():
            gc.enable()


_listener = None


def install() -> None:
    """Registers the compile listener once."""
    global _listener
    if _listener is None:
        _listener = _PausedWhileCompiling()
        event.register("numba:compile", _listener)

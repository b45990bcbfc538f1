"""Numba's IR inlining copies a callee's scope once per block; here it copies it once per copy.

Before it inlines a callee (``inline="always"``: the layer's plan, fill and pool code inlined into
their tasks), Numba's ``InlineWorker.inline_ir`` copies the callee's IR twice, deep-copying each
block on its own (numba/numba#8989, NVIDIA/numba-cuda#688). Every block refers to the function's
one ``Scope``, which holds all its variables, so each block's copy copies all of them again: for
``_fill_block`` (151 blocks) that took 1.0 s of the layer's blocks task's ~6.5 s cold compile.
While ``inline_ir`` runs, ``install`` gives it a ``copy`` module whose ``deepcopy`` shares one
memo through the call, so the blocks of a copy share one copy of the scope, as the callee's
blocks share theirs. Numba then finds the single scope it asserts there is (it compares scopes by
value, so the per-block copies passed too) and renames the variables in it once, for every block.

Numba compiles under one process-wide lock, so swapping the module's ``copy`` for the call is
seen by no other compile. It applies to every Numba compile in the process once the kernels are
imported (a user's own Numba code too), with the same results. Only for the Numba versions checked
(tests/test_numba_inline.py counts the scope copies and checks the inlined code's results against
Numba's own copy); others keep Numba's copy.
"""
import copy
import functools

import numba
from numba.core import inline_closurecall

CHECKED_VERSIONS = ("0.68",)
APPLIES = ".".join(numba.__version__.split(".")[:2]) in CHECKED_VERSIONS and inline_closurecall.copy is copy


class _SharedMemoCopy:
    """The ``copy`` module as ``inline_ir`` uses it, its ``deepcopy`` with one memo for the call.
    The second copy that ``inline_ir`` makes copies the first copy, whose objects are not in the
    memo (it is keyed by the originals, which it keeps alive), so the two copies share nothing."""

    def __init__(self):
        self.memo = {}

    def deepcopy(self, x, memo=None):
        return copy.deepcopy(x, self.memo if memo is None else memo)

    def __getattr__(self, name):
        return getattr(copy, name)


def install() -> bool:
    """Wraps ``InlineWorker.inline_ir`` once; returns whether the wrapper is in place."""
    worker = inline_closurecall.InlineWorker
    if not APPLIES or getattr(worker.inline_ir, "_tf_blade_shared_memo", False):
        return APPLIES
    numba_inline_ir = worker.inline_ir

    @functools.wraps(numba_inline_ir)
    def inline_ir(self, *args, **kwargs):
        outer, inline_closurecall.copy = inline_closurecall.copy, _SharedMemoCopy()
        try:
            return numba_inline_ir(self, *args, **kwargs)
        finally:
            inline_closurecall.copy = outer

    inline_ir._tf_blade_shared_memo = True
    worker.inline_ir = inline_ir
    return True

"""Numba's IR inlining with one scope copy per copy of the callee (tf_blade/runtime/numba_inline.py)."""
import copy

import numpy as np
import pytest
from numba import njit
from numba.core import inline_closurecall, ir

from tf_blade.runtime import numba_inline

pytestmark = pytest.mark.skipif(not numba_inline.APPLIES, reason="a Numba version numba_inline was not checked with")


def _callee_and_caller():
    """A fresh callee of many blocks, inlined twice into a fresh caller (new functions: compiled anew)."""
    @njit(inline="always")
    def callee(x):
        s = 0
        for i in range(x.shape[0]):
            if x[i] > 3:
                s += x[i]
            elif x[i] < -3:
                s -= 2 * x[i]
            else:
                s += 1
        t = 0
        while s > 100:
            s -= 7
            t += 1
        return s * 1000 + t

    @njit
    def caller(x):
        return callee(x) - callee(x[::-1][:3])
    return callee, caller


def _scope_copies(monkeypatch, inline_ir, x):
    """(caller(x), the function Scopes deep-copied while compiling it, the callee's result in
    Python) with ``inline_ir`` as Numba's inliner."""
    copies = []

    def counting_deepcopy(self, memo):
        if self.parent is not None:  # a function's scope, not the global one it copies with it
            copies.append(self)
        new = ir.Scope.__new__(ir.Scope)
        memo[id(self)] = new
        for name, value in self.__dict__.items():
            setattr(new, name, copy.deepcopy(value, memo))
        return new

    monkeypatch.setattr(ir.Scope, "__deepcopy__", counting_deepcopy, raising=False)
    monkeypatch.setattr(inline_closurecall.InlineWorker, "inline_ir", inline_ir)
    try:
        callee, caller = _callee_and_caller()
        result = caller(x)
    finally:
        monkeypatch.undo()
    return result, len(copies), callee.py_func(x) - callee.py_func(x[::-1][:3])


def test_kernels_install_it():
    import tf_blade.kernels  # noqa: F401  (installs it)
    assert getattr(inline_closurecall.InlineWorker.inline_ir, "_tf_blade_shared_memo", False)
    assert numba_inline.install()  # a second install keeps the one wrapper
    assert not hasattr(inline_closurecall.InlineWorker.inline_ir.__wrapped__, "_tf_blade_shared_memo")


def test_each_copy_copies_the_scope_once_and_the_result_is_numbas():
    numba_inline.install()
    ours = inline_closurecall.InlineWorker.inline_ir
    x = np.array([5, -4, 0, 9, 2, -8, 1, 30], np.int64)
    shared, shared_copies, expected = _scope_copies(pytest.MonkeyPatch(), ours, x)
    per_block, per_block_copies, _ = _scope_copies(pytest.MonkeyPatch(), ours.__wrapped__, x)
    assert shared == per_block == expected
    assert shared_copies == 4  # two copies of the callee for each of its two calls
    assert per_block_copies > 4 * 5  # Numba's: one a block of each copy (the callee has more than 5)
    assert inline_closurecall.copy is copy  # the module's own copy is back after each call


def test_deepcopy_shares_one_memo_per_call():
    shim = numba_inline._SharedMemoCopy()
    scope = object()
    blocks = [[scope], [scope]]
    first, second = shim.deepcopy(blocks[0]), shim.deepcopy(blocks[1])
    assert first[0] is second[0] and first[0] is not scope
    again = numba_inline._SharedMemoCopy().deepcopy(blocks[0])
    assert again[0] is not first[0]
    assert shim.copy is copy.copy  # the rest of the module passes through

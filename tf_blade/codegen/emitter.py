"""Builds the source of one generated kernel module, line by line, for the lowerings."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import numpy as np

from ..graph.attrs import bits_dtype
from ..kernels.errors import context_suffix


@dataclasses.dataclass
class Value:
    """A tensor inside generated code. Rank-0 tensors are shape-(1,) arrays (see kernels/)."""
    var: str
    dtype: str                    # NumPy dtype name, or "string"
    rank: int
    const: Optional[np.ndarray] = None

    @property
    def is_string(self):
        return self.dtype == "string"

    @property
    def off(self):                # strings: their tstrings (kernels/strings.py) travel beside the ids
        return self.var + "_off"

    @property
    def dat(self):
        return self.var + "_dat"


class Emitter:
    def __init__(self):
        self.lines: List[str] = []
        self.globals: List[str] = []
        self.kernel_modules: Dict[str, str] = {}
        self.imports = set()          # import lines a lowering's code needs beyond NumPy and kernels
        self.fail_expr = "()"
        self._count = 0
        self.node_name = ""
        self._suffixes: Dict[str, str] = {}  # node name -> its context suffix's constant

    def tmp(self, hint="t") -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def line(self, text: str):
        self.lines.append(text)

    @staticmethod
    def int64(value) -> str:
        """An integer argument of a kernel call, as source: np.int64, never a bare literal, which
        Numba types as Literal[int] and compiles the kernel for again at each new value
        (tests/test_compile_once.py)."""
        return f"np.int64({int(value)})"

    def kernel(self, module: str, func: str) -> str:
        alias = self.kernel_modules.setdefault(module, f"k_{module}")
        return f"{alias}.{func}"

    def const(self, array: np.ndarray, hint="C") -> str:
        name = f"{hint}{len(self.globals)}"
        arr = np.ascontiguousarray(array)
        shape = f".reshape({tuple(arr.shape) if arr.ndim else (1,)!r})"
        if arr.dtype.kind in "fc":  # as bits: a repr writes inf/nan as names and drops NaN signs
            bits = arr.view(bits_dtype(arr.dtype))
            self.globals.append(f"{name} = np.array({bits.ravel().tolist()!r}, dtype=np.{bits.dtype.name})"
                                f".view(np.{arr.dtype.name}){shape}")
        else:
            self.globals.append(f"{name} = np.array({arr.ravel().tolist()!r}, dtype=np.{arr.dtype.name}){shape}")
        return name

    def add_context(self, node_name: str) -> str:
        """The line that names ``node_name`` in the error (its suffix a constant of the module)."""
        if node_name not in self._suffixes:
            self._suffixes[node_name] = self.const(context_suffix(node_name), "N")
        return f"k_errors.add_context(err, {self._suffixes[node_name]})"

    def check(self):
        """Stops the body when the last kernel rejected its input."""
        self.line("if err[0] != 0:")
        self.line(f"    {self.add_context(self.node_name)}")
        self.line(f"    return {self.fail_expr}")

    def share_pool(self, out: str, source: Value):
        """A string result that reorders ``source``'s ids keeps reading ``source``'s pool."""
        self.line(f"{out}_off, {out}_dat = {source.off}, {source.dat}")

    def made_strings(self, tstrings: str, ids: str, owner: Optional[str] = None) -> str:
        """A string value whose strings a kernel laid out in the tstring buffer ``tstrings``;
        ``ids`` (an expression) indexes them, in its shape. Strings that view another buffer's
        bytes (split tokens) carry that ``owner`` as their data (string_at ignores it beside
        tstrings): every reader then holds it too, or Numba frees an owner made inside the op
        after its last use, under the views."""
        out = self.tmp()
        self.line(f"{out}_off = {tstrings}")
        self.line(f"{out}_dat = {owner or tstrings + '[:0]'}")
        self.line(f"{out} = {ids}")
        return out

    def bytes_owner(self, strings: Value) -> Optional[str]:
        """The owner of ``strings``' bytes, for views of them (made_strings): none for a constant
        (its bytes live as long as the module); the data of strings that are views themselves;
        else their tstrings."""
        if strings.const is not None:
            return None
        owner = self.tmp()
        self.line(f"{owner} = {strings.dat} if {strings.dat}.shape[0] > 0 else {strings.off}")
        return owner

    def call(self, n_out: int, expr: str, fallible: bool) -> List[str]:
        outs = [self.tmp() for _ in range(n_out)]
        self.line(f"{', '.join(outs)} = {expr}" if outs else expr)
        if fallible:
            self.check()
        return outs

    def reshaped(self, source: Value, flat: str, shape: str, rank: int) -> str:
        """A new variable: ``flat`` viewed with the runtime ``shape`` of static ``rank``; a string
        result keeps reading ``source``'s pool."""
        out = self.tmp()
        self.line(f"{out} = {self.reshape(flat, shape, rank)}")
        if source.is_string:
            self.share_pool(out, source)
        return out

    @staticmethod
    def reshape(flat: str, shape: str, rank: int) -> str:
        """Expression reshaping ``flat`` to the runtime shape vector ``shape`` of static ``rank``."""
        if rank == 0:
            return f"np.ascontiguousarray({flat}).reshape((1,))"
        dims = ", ".join(f"{shape}[{i}]" for i in range(rank))
        return f"np.ascontiguousarray({flat}).reshape(({dims},))"


def empty_expr(dtype: str, rank: int) -> str:
    return f"np.zeros({(0,) * max(rank, 1)!r}, dtype=np.{dtype})"

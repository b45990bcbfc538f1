"""The two ways a fused node runs its kernel.

native: a ``BladeFusedCall`` node (blade_op.cc). Its first run calls back into Python to compile
        the spec; afterwards every call goes straight to the Numba entry point, without the GIL.
numpy:  a ``PyFuncStateless`` node (what tf.numpy_function builds) calling the same kernel body;
        ~20 us a call and holds the GIL, but needs no compiler. It lives only in this process.
A cluster holding an Assert becomes the stateful twin of either op (``BladeFusedCallStateful``,
``PyFunc``): Grappler would prune a stateless one whose outputs nobody reads.
"""
from __future__ import annotations

import json
import logging
import os
import threading

import numpy as np

from ..codegen.dtypes import RESOURCE, STRING
from ..codegen.parts import ref_meta
from ..codegen.registry import has_effects
from ..graph.ir import Node
from ..kernels.errors import OOM_PREFIX, error_text, new_error_buffer
from ..kernels.strings import tstrings_from_bytes
from . import compiler

log = logging.getLogger("tf_blade")
FUSED_OPS = ("BladeFusedCall", "BladeFusedCallStateful")   # indexed by has_effects(spec)
NUMPY_OPS = ("PyFuncStateless", "PyFunc")
_native = None
_native_error = None
_lock = threading.Lock()


def _no_gradient(op, *grads):
    raise LookupError(
        f"tf_blade: no gradient for the fused op {op.name} ({op.type}): an optimized model is for "
        "inference. Train the original model (a @tf_blade.function runs its original graph while "
        "a gradient tape records), then optimize it again.")


def register_gradients():
    """Fused ops get a gradient that says why there is none: TF's own message (no gradient
    defined for op type BladeFusedCall) names no way out, and no gradient at all would let
    training skip the tables silently."""
    import tensorflow as tf
    for op_type in FUSED_OPS:
        try:
            tf.RegisterGradient(op_type)(_no_gradient)
        except KeyError:  # registered already (this module imported again)
            pass


def native_bridge():
    """The loaded native bridge, or None (with the reason in ``native_unavailable_reason()``)."""
    global _native, _native_error
    with _lock:
        if _native is None and _native_error is None:
            from . import native
            from .malloc_tuning import tune_malloc
            tune_malloc()  # the native op is what serves; its per-call buffers should stay mapped
            try:
                _native = native.load()
                _native.set_compile_callback(_compile_entry)
            except native.NativeBridgeUnavailable as e:
                _native_error = str(e)
                log.warning("tf_blade: native bridge unavailable, using numpy_function: %s", e)
        return _native


def native_unavailable_reason():
    return _native_error


def choose_bridge(requested: str | None) -> str:
    requested = requested or os.environ.get("TF_BLADE_BRIDGE", "auto")
    if requested not in ("auto", "native", "numpy"):
        raise ValueError(f"bridge must be 'auto', 'native' or 'numpy', not {requested!r}")
    if requested == "numpy":
        return "numpy"
    if native_bridge() is None:
        if requested == "native":
            raise RuntimeError(f"tf_blade: native bridge requested but unavailable: {_native_error}")
        return "numpy"
    return "native"


def _compile_entry(spec_bytes: bytes, in_dtypes, in_ranks) -> int:
    """The entry of the op's kernel for inputs of these dtypes and ranks (the op's dispatch key).
    The kernel reads its inputs by the spec's ranks: other inputs (a variable assigned without
    shape validation, a feed that skipped the signature's checks) are refused, and the op runs
    its original TF ops for that key instead, which compute or reject them as TF does."""
    text = spec_bytes.decode()
    want = [(inp["dtype"], inp["rank"]) for inp in json.loads(text)["inputs"]]
    got = list(zip(in_dtypes, in_ranks))
    if got != want:
        raise ValueError(f"tf_blade: kernel inputs of (dtype, rank) {want}, called with {got}")
    module = compiler.load_kernel(text)
    return module.entry.address


def _out_meta(spec):
    return [ref_meta(spec, ref) for ref in spec["outputs"]]


def _attr(**kw):
    from tensorflow.core.framework import attr_value_pb2
    return attr_value_pb2.AttrValue(**kw)


def _list_attr(**kw):
    from tensorflow.core.framework import attr_value_pb2
    return _attr(list=attr_value_pb2.AttrValue.ListValue(**kw))


def native_node(name, spec, input_refs, output_refs, fallback=None, fallback_inputs=()) -> Node:
    """A BladeFusedCall node; embedding tables arrive as resource handles, read in place.
    ``fallback``: the library function holding the cluster's original ops, if it has one;
    ``fallback_inputs``: refs only that function reads (static table handles), passed last."""
    from tensorflow.core.framework import attr_value_pb2
    from ..passes.fuse import fused_input_dtypes, spec_text
    text = spec_text(spec)
    meta = _out_meta(spec)
    fallback_inputs = list(fallback_inputs) if fallback else []
    tin = fused_input_dtypes(spec) + [RESOURCE] * len(fallback_inputs)
    tout = [d for d, _ in meta]
    ranks = [r for _, r in meta]
    key = compiler.spec_key(text)
    raw = {"Tin": _list_attr(type=tin), "Tout": _list_attr(type=tout), "out_ranks": _list_attr(i=ranks),
           "cluster": _attr(s=text.encode()), "cluster_key": _attr(s=key.encode()),
           "fallback": _list_attr(func=[attr_value_pb2.NameAttrList(name=fallback)] if fallback else []),
           "fallback_inputs": _attr(i=len(fallback_inputs))}
    return Node(name=name, op=FUSED_OPS[has_effects(spec)], inputs=list(input_refs) + fallback_inputs, control_inputs=[],
                attrs={"Tin": tin, "Tout": tout, "out_ranks": ranks, "cluster_key": key},
                raw_attrs=raw, out_dtypes=tout, out_ranks=ranks)


native_node.takes_resources = True
native_node.takes_fallback = True


class NumpyKernel:
    """The Python callable a PyFuncStateless node runs: NumPy arrays in, NumPy arrays out."""

    def __init__(self, spec):
        from ..passes.fuse import spec_text
        self.text = spec_text(spec)
        self.inputs = spec["inputs"]
        self.out_meta = _out_meta(spec)
        self.module = None

    def __call__(self, *arrays):
        if self.module is None:
            module = compiler.load_kernel(self.text)
            module.compile_tasks()  # body runs them (the entry may not: tf_blade/codegen/generate.py)
            self.module = module
        args = []
        for a, inp in zip(arrays, self.inputs):
            if inp["dtype"] == STRING:
                args += _string_pool(a)
            else:
                args.append(np.ascontiguousarray(a).reshape(a.shape or (1,)))
        err = new_error_buffer()
        outs = self.module.body(*args, True, err)  # solo: under the GIL, one call at a time
        if err[0]:
            # py_func reports ValueError as InvalidArgument and MemoryError as ResourceExhausted
            text = error_text(err)
            raise (MemoryError if text.startswith(OOM_PREFIX) else ValueError)(text)
        return [o.reshape(()) if rank == 0 else o for o, (_, rank) in zip(outs, self.out_meta)]


def _string_pool(a):
    flat = [x if isinstance(x, bytes) else str(x).encode() for x in np.asarray(a, dtype=object).ravel()]
    tstrings = tstrings_from_bytes(flat)
    ids = np.arange(len(flat), dtype=np.int64).reshape(a.shape or (1,))
    return [ids, tstrings, tstrings[:0]]


def numpy_node(name, spec, input_refs, output_refs, keep_alive: list) -> Node:
    from tensorflow.python.ops import script_ops
    kernel = NumpyKernel(spec)
    keep_alive.append(kernel)  # the py-func registry holds only a weak reference
    token = script_ops._py_funcs.insert(kernel)
    tin = [inp["dtype"] for inp in spec["inputs"]]
    tout = [d for d, _ in kernel.out_meta]
    raw = {"token": _attr(s=token.encode()), "Tin": _list_attr(type=tin), "Tout": _list_attr(type=tout)}
    return Node(name=name, op=NUMPY_OPS[has_effects(spec)], inputs=list(input_refs), control_inputs=[],
                attrs={"Tin": tin, "Tout": tout}, raw_attrs=raw,
                out_dtypes=tout, out_ranks=[r for _, r in kernel.out_meta])

"""The one lowering registry: TF op type -> Lowering. Each lowering lives in lowerings/<op>.py."""
from __future__ import annotations

import functools
from typing import Dict, List, Optional

import numpy as np

LOWERINGS: Dict[str, "Lowering"] = {}
# Ops whose effect is an error, not an output: kept however little reads them, and they make
# their fused op stateful (runtime/bridge.py).
EFFECT_OPS = frozenset({"Assert"})


def has_effects(spec) -> bool:
    return any(node["op"] in EFFECT_OPS for node in spec["nodes"])


class Lowering:
    """How one TF op becomes Numba source.

    ``check`` runs at clustering time on the graph model and returns why a node cannot be fused
    (or None); ``emit`` runs at compile time on the cluster spec and returns the output variables.
    """
    runtime_attrs = ()        # attrs passed as runtime parameters, not baked into the template
    array_attrs = ()          # list attrs passed as runtime arrays (attr_array), not baked in either
    # Its string constant inputs are messages it reads through texts() only: they stay out of its
    # part (the template holds no constant of theirs).
    string_consts_are_texts = False
    reads_shapes_only = False # reads only its inputs' shapes: parts of such ops are too light to run in parallel
    view_only = False         # its output views its first input's data: no per-element work either
    elementwise = False       # a few vectorised ns an element (arithmetic, log1p): no group either

    def check(self, node, graph) -> Optional[str]:
        return None

    def texts(self, raw: dict, spec) -> List[str]:
        """Message text its code writes, passed to its part as parameters (uint8 vectors, named by
        attrs["texts"] in emit; errors.text makes them a part of a message), not written into the
        template: each model's names (Keras layer counters, the tensor names tf.debugging's
        messages quote) gave its part another template and a compile, warm caches or not."""
        return []

    def run_time_attrs(self) -> tuple:
        """Its attrs a part is given at run time, left out of its template."""
        return self.runtime_attrs + self.array_attrs

    def attr_array(self, raw: dict, spec, attr: str):
        """The array its part is given for ``attr``, one of ``array_attrs``."""
        return np.asarray(raw["attrs"].get(attr, []))

    def const_is_value(self, raw: dict, index: int, value) -> bool:
        """Whether the numeric constant ``value`` at input ``index`` may reach this op's code as a
        value its part is given at run time, not as code: only if nothing it emits depends on the
        value (parts.lifted_consts)."""
        return False

    def emit(self, node, ins, em) -> List[str]:
        raise NotImplementedError


class SpecOnlyLowering(Lowering):
    """The lowering of an op a spec rewrite makes (feature_column/): no TF graph holds it."""

    def check(self, node, graph) -> Optional[str]:
        return "exists only inside cluster specs"


def lowering(*op_types: str):
    def register(cls):
        instance = cls()
        for op_type in op_types:
            if op_type in LOWERINGS:
                raise ValueError(f"two lowerings for {op_type}")
            LOWERINGS[op_type] = instance
        return cls
    return register


@functools.lru_cache(maxsize=1)  # called per node by the partitioner: scan the package once
def load_all():
    """Imports every lowering module so their decorators fill LOWERINGS."""
    import importlib
    import pkgutil

    from . import lowerings
    for info in pkgutil.iter_modules(lowerings.__path__):
        importlib.import_module(f"{lowerings.__name__}.{info.name}")
    return LOWERINGS

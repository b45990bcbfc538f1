"""Compiles the kernel library before the first model: ``tf-blade precompile``.

Numba compiles a library kernel at its first use and keeps the machine code in its disk cache
(keyed by the kernel's types and this machine's CPU, so it cannot ship in the wheel). The first
model optimized on a machine pays for the library: ~5 s for the 26-column criteo-fc on our
2-core machine, a child process compiling some of it beside the first (docs/architecture.md). A
model after that compiles only its own generated code and the library kernels it is the first to
use: ~0.5 s for a layer of hashed string columns like criteo-fc's or keras-prep's; ~8 s for wide &
deep after criteo-fc (mostly the library kernels criteo-fc does not use). Run this
where the library cache should be filled before serving starts, e.g. while building a serving
image (with ``NUMBA_CACHE_DIR`` and ``TF_BLADE_CACHE_DIR`` pointing where the image keeps them).

It optimizes and runs each bundled example model kind once, small: library kernels are typed by
dtype and rank, never by the number of columns or the batch size, so full-size models find them
compiled (their own generated code still compiles at their first optimize()). Besides the three
Criteo models, ``column-kinds`` (one column of each other feature-column kind: identity,
vocabulary lists, crosses, weighted, bucketized, indicator, sparse inputs) and ``keras-layers``
(lookups, salted hashing, discretization, crossing, category encoding) cover the other kernels:
all five took 89 s from empty caches on our machine, and a user model with nine column kinds then
optimized in 25.7 s instead of 49.6 s (the rest is its own generated code).
"""
from __future__ import annotations

import argparse
import time


def _models():
    from . import examples as ex
    small = 2
    return {
        "criteo-fc": (lambda: ex.criteo_feature_model(small, dim=4), lambda: ex.synthetic_batch(4, small)),
        "criteo-wdl": (lambda: ex.criteo_wdl_model(small, 2, dim=4, hidden=(8,)),
                       lambda: {**ex.synthetic_batch(4, small), **ex.synthetic_numeric(4, 2)}),
        "keras-prep": (lambda: ex.keras_prep_model(small, dim=4, hidden=(8,)), lambda: ex.synthetic_batch(4, small)),
        "column-kinds": (ex.column_kinds_model, lambda: ex.column_kinds_batch(4)),
        "keras-layers": (ex.keras_layers_model, lambda: ex.keras_layers_batch(4)),
    }


def precompile(kinds=None, log=print) -> dict:
    """Compiles (or loads from the disk caches) the kernels of the bundled model ``kinds`` (all by
    default); returns {kind: seconds}."""
    import tf_blade
    from .examples import signature_inputs
    models = _models()
    unknown = set(kinds or ()) - set(models)
    if unknown:
        raise ValueError(f"unknown model kinds {sorted(unknown)}; known: {sorted(models)}")
    seconds = {}
    for kind in kinds or models:
        build, batch = models[kind]
        t0 = time.perf_counter()
        module = build()
        serve = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
        serve(**signature_inputs(batch()))
        seconds[kind] = time.perf_counter() - t0
        log(f"{kind}: kernels compiled or loaded in {seconds[kind]:.1f} s")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tf-blade precompile", description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", help="model kinds (default: all of them: " + ", ".join(_models()) + ")")
    args = parser.parse_args(argv)
    precompile(args.kinds or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Public entry points: optimize() and @function."""
from __future__ import annotations

import functools
import inspect
import os
import time

import tensorflow as tf
from tensorflow.python.eager import record

from .graph.frontend import (_identifier, captured_resources, collect_variables, export_table, function_io,
                             python_root, rebuild, static_table_handles, static_tables, variable_shapes)
from .fast_call import eager_types, flat_inputs, with_fast_call
from .passes.pipeline import Options, run_pipeline
from .report import Report
from .runtime import bridge as bridges
from .runtime import gc_pause


class OptimizedModel(tf.Module):
    """What optimize() returns: ``signatures`` like a loaded SavedModel, plus ``report``."""

    def __init__(self, signatures, functions, variables, report, keep_alive):
        super().__init__(name="tf_blade_optimized")
        self.signatures = signatures
        self._functions = functions
        self._variables = list(variables)
        self.report = report
        self._keep_alive = keep_alive   # numpy-bridge kernels referenced by py-func tokens

    def __call__(self, *args, **kwargs):
        """The one signature, called as the original function is: a SparseTensor or RaggedTensor
        argument goes in as itself (the signature takes its components: positionally in its
        place, by keyword as ``x``, ``x_1``, ...)."""
        if len(self.signatures) != 1:
            raise TypeError("call a signature: model.signatures[name](...)")
        if not all(isinstance(a, tf.Tensor) for a in args):  # the common case stays cheap
            args = tf.nest.flatten(list(args), expand_composites=True)
        for name in [k for k, v in kwargs.items() if isinstance(v, tf.__internal__.CompositeTensor)]:
            parts = tf.nest.flatten(kwargs.pop(name), expand_composites=True)
            kwargs.update({name if i == 0 else f"{name}_{i}": part for i, part in enumerate(parts)})
        return next(iter(self.signatures.values()))(*args, **kwargs)


def load(export_dir, tags=None, options=None):
    """``tf.saved_model.load`` for serving from Python: the loaded signatures take the fast call
    (tf_blade/fast_call.py: eager tensors skip TF's per-call argument binding, ~0.5 ms for 26
    inputs). Any SavedModel, optimized or not; importing tf_blade also registers the fused op a
    written SavedModel runs."""
    loaded = tf.saved_model.load(os.fspath(export_dir), tags=tags, options=options)
    for fn in getattr(loaded, "signatures", {}).values():
        with_fast_call(fn)
    return loaded


def disabled() -> bool:
    return os.environ.get("TF_BLADE_DISABLE", "") not in ("", "0")


def optimize(model, output_dir=None, *, bridge=None, min_cluster_size=2, allow_ops=None,
             deny_ops=(), inputs=None, outputs=None):
    """Optimizes a SavedModel (its directory or what tf.saved_model.load returned), tf.Module,
    tf.function, ConcreteFunction, Keras model (its call on its inputs, as "serving_default") or
    GraphDef (a GraphDef needs ``inputs`` and ``outputs``: tensor names such as "x:0").

    Returns an OptimizedModel; with ``output_dir`` also writes an optimized SavedModel there
    (loadable after ``import tf_blade``). ``bridge``: "native", "numpy" or "auto" (default, or
    the TF_BLADE_BRIDGE environment variable).
    """
    if isinstance(model, tf.compat.v1.GraphDef):
        model = _graph_def_function(model, inputs, outputs)
    options = Options(min_cluster_size=min_cluster_size,
                      allow_ops=frozenset(allow_ops) if allow_ops is not None else None,
                      deny_ops=frozenset(deny_ops))
    root, functions = _concrete_functions(model)
    # tf.saved_model.save(module) serves a module's one tf.function as serving_default: so does ours
    default = isinstance(model, tf.Module) and not _is_keras_model(model) and not getattr(model, "signatures", None)
    return _optimize(root, functions, output_dir, bridge, options, default_signature=default)


def _optimize(root, functions, output_dir, bridge, options, default_signature=False):
    variables = collect_variables(root, *functions.values())
    chosen = "original" if disabled() else bridges.choose_bridge(bridge)
    report = Report(bridge=chosen)
    signatures, keep_alive, saved = {}, [], {}
    # the passes allocate ~10^5 small objects: with TF imported and a model loaded, each full
    # collection they set off walks all of TF's objects (one 0.3-0.4 s pause in a warm optimize()
    # of criteo-fc)
    with gc_pause.paused():
        for name, cf in functions.items():
            signatures[name], entry = _optimize_function(cf, variables, chosen, options, keep_alive, root)
            report.functions[name] = entry
            if output_dir is not None:
                saved[name] = _function_to_save(cf, signatures[name], variables, chosen, options, root)
    optimized = OptimizedModel(signatures, functions, variables, report, keep_alive)
    if output_dir is not None:
        resources = {id(r): r for r in static_tables(root) + captured_resources(root, saved.values())}
        _save(saved, variables, list(resources.values()), output_dir, report, default_signature)
        for name in _other_functions(root, functions):
            report.save_notes[name] = "this tf.function attribute is not written (only signatures are optimized and written)"
    return optimized


def _optimize_function(cf, variables, bridge, options, keep_alive, root=None):
    if bridge == "original":
        return cf, {"left_alone": "TF_BLADE_DISABLE is set", "clusters": []}
    start = time.perf_counter()
    _, _, outputs = function_io(cf)
    if bridge == "native":
        make = bridges.native_node
    else:
        make = functools.partial(bridges.numpy_node, keep_alive=keep_alive)
    tables = static_table_handles(root, cf)
    graph_def, entry, fetches = run_pipeline(cf.graph.as_graph_def(), [t.name for t in outputs], options,
                                             make, variable_shapes(cf, variables), tables,
                                             lambda ph, tin, tout: export_table(tables[ph], tin, tout),
                                             _captured_float_constants(cf))
    if not entry["clusters"]:
        return cf, entry
    _, new_cf = rebuild(cf, graph_def, variables, fetches)
    # The py-func registry holds numpy-bridge kernels weakly: the function itself must keep them.
    new_cf._tf_blade_kernels = keep_alive
    entry["rewrite_seconds"] = round(time.perf_counter() - start, 3)
    return with_fast_call(new_cf), entry


def _captured_float_constants(cf):
    return {t.op.name for t in cf.graph.internal_captures if t.op.type == "Const" and (t.dtype.is_floating or t.dtype.is_complex)}


def _function_to_save(cf, optimized_cf, variables, bridge, options, root):
    """A SavedModel must outlive this process: numpy-bridge tokens do not, so save native ops."""
    if bridge == "native":
        return optimized_cf
    if bridge == "numpy" and bridges.native_bridge() is not None:
        return _optimize_function(cf, variables, "native", options, [], root)[0]
    return cf


def _save(functions, variables, tables, output_dir, report, default_signature=False):
    holder = tf.Module(name="tf_blade_saved")
    holder.blade_variables = list(variables)
    holder.blade_tables = list(tables)  # fused ops hand them to their fallback; unfused lookups read them
    holder.blade_functions = dict(functions)
    signatures = {name: cf for name, cf in functions.items() if _is_signature_compatible(cf)}
    if default_signature and len(signatures) == 1 and "serving_default" not in signatures:
        (name, cf), = signatures.items()
        signatures["serving_default"] = cf
        report.save_notes[name] = "also written as the serving_default signature, as tf.saved_model.save does"
    for name in functions.keys() - signatures.keys():
        report.save_notes[name] = (f"written as blade_functions[{name!r}], not as a signature (its inputs "
                                   "are not all plain tensors)")
    try:
        tf.saved_model.save(holder, output_dir, signatures=signatures or None)
    except AssertionError as e:  # TF's check that every captured resource is saved with its owner
        if "untracked" not in str(e):
            raise
        raise ValueError("tf_blade: cannot save the optimized model: a function reads a resource (a lookup "
                         "table) that no object passed to optimize() holds; pass the tf.Module, tf.function "
                         "or SavedModel that owns it rather than a ConcreteFunction. TF said: "
                         + str(e).splitlines()[0]) from None
    report.saved_to = output_dir


def _other_functions(root, optimized):
    """Names of ``root``'s tf.function attributes that optimize() did not take (a loaded
    SavedModel's functions outside its signatures; a module's attributes are taken by name)."""
    if root is None:
        return []
    try:
        children = root._trackable_children()  # what TF itself saves of an object
    except Exception:  # noqa: BLE001 - not a trackable we can read: nothing to name
        return []
    # A loaded SavedModel's signature calls the function it was made of (its `serve`): that one is kept.
    called = {op.get_attr("f").name for cf in optimized.values() for op in cf.graph.get_operations()
              if op.type in ("PartitionedCall", "StatefulPartitionedCall")}
    return sorted(name for name, child in children.items()
                  if isinstance(child, tf.types.experimental.GenericFunction) and name not in optimized
                  and not all(_name(cf) in called for cf in child._list_all_concrete_functions()))


def _name(cf) -> str:
    return cf.name.decode() if isinstance(cf.name, bytes) else cf.name


def _is_signature_compatible(cf):
    specs = tf.nest.flatten(cf.structured_input_signature, expand_composites=False)
    return all(isinstance(s, tf.TensorSpec) for s in specs)


def _concrete_functions(model):
    """(trackable root, {signature name: ConcreteFunction}) for every accepted model kind."""
    if isinstance(model, (str, os.PathLike)):
        return _signatures(tf.saved_model.load(os.fspath(model)), os.fspath(model))
    if not isinstance(model, tf.Module) and isinstance(model, tf.__internal__.tracking.AutoTrackable) \
            and hasattr(model, "signatures"):  # what tf.saved_model.load returned
        return _signatures(model, "the loaded SavedModel")
    if isinstance(model, tf.types.experimental.ConcreteFunction):
        return None, {"serving_default": model}
    if isinstance(model, tf.types.experimental.GenericFunction):  # its tables live in what its code names
        return python_root(model.python_function), _traced(model, "serving_default")
    if _is_keras_model(model):  # its call, not the tf.functions Keras keeps (predict_function reads an iterator)
        return model, _traced(_keras_call(model), "serving_default")
    if isinstance(model, tf.Module):
        functions = {}
        sigs = getattr(model, "signatures", None)
        if sigs:
            functions.update(dict(sigs))
        for attr, value in vars(model).items():
            if isinstance(value, tf.types.experimental.GenericFunction):
                functions.update(_traced(value, attr))
        for attr in dir(type(model)):
            value = getattr(model, attr, None)
            if isinstance(value, tf.types.experimental.GenericFunction) and attr not in functions:
                functions.update(_traced(value, attr))
        if not functions:
            raise ValueError("the tf.Module has no traced tf.function (give it an input_signature "
                             "or call it once)")
        return model, functions
    raise TypeError(f"optimize() takes a SavedModel (path or loaded), tf.Module, tf.function or "
                    f"ConcreteFunction, not {type(model).__name__}")


def _signatures(loaded, where):
    if not loaded.signatures:
        raise ValueError(f"{where}: the SavedModel has no signatures to optimize")
    return loaded, dict(loaded.signatures)


def _graph_def_function(graph_def, inputs, outputs):
    if not inputs or not outputs:
        raise ValueError("optimize(graph_def) needs inputs=[...] and outputs=[...] tensor names")
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.graph_util.import_graph_def(graph_def, name=""), [])
    graph = wrapped.graph
    return wrapped.prune([graph.get_tensor_by_name(n) for n in inputs],
                         [graph.get_tensor_by_name(n) for n in outputs])


def _is_keras_model(model) -> bool:
    return callable(model) and all(hasattr(model, a) for a in ("predict", "fit", "inputs", "layers"))


def _keras_call(model):
    """A Keras model's call as a tf.function of one TensorSpec per model input, as its serving
    export keys it (a functional model's inputs; a subclassed one has none until built on data):
    the inputs by their names, the outputs by the output layers' names for tf_keras (as
    tf.saved_model.save writes it), as the call returns them for Keras 3 (as model.export does)."""
    inputs = model.inputs
    if not inputs:
        raise ValueError("optimize(): this Keras model has no known inputs (a subclassed model?); pass a "
                         "tf.function with an input_signature that calls it")
    specs, names = [], []
    for i, t in enumerate(inputs):
        name = t.name.split(":")[0]
        specs.append(tf.TensorSpec(t.shape, t.dtype, name=name))
        names.append(_identifier(name, i, names))
    # tf_keras by its classes, not the model's own: a user's subclass lives in the user's module
    is_tf_keras = any(c.__module__.startswith("tf_keras") for c in type(model).__mro__)
    output_names = getattr(model, "output_names", None) if is_tf_keras else None

    def call(*xs):
        outputs = model(xs[0] if len(xs) == 1 else list(xs))
        if output_names:
            return dict(zip(output_names, tf.nest.flatten(outputs)))
        return outputs
    call.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    return tf.function(call, input_signature=specs)


def _traced(fn, name):
    if fn.input_signature is not None:
        return {name: fn.get_concrete_function()}
    concrete = fn._list_all_concrete_functions()  # every signature traced so far
    if not concrete:
        raise ValueError(f"{name}: the tf.function has no input_signature and was never called")
    return {name if i == 0 else f"{name}_{i}": cf for i, cf in enumerate(concrete)}


def function(func=None, **tf_function_kwargs):
    """Drop-in for @tf.function: each traced signature is optimized once, then reused. While a
    gradient tape records, calls run the original tf.function (fused ops have no gradient)."""
    if func is None:
        return functools.partial(function, **tf_function_kwargs)
    traced = tf.function(func, **tf_function_kwargs)
    optimized = {}
    by_types = {}  # eager_types(args) -> the optimized function: skips tf.function's lookup (0.3-0.5 ms)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if record.could_possibly_record():  # training: fused ops have no gradient, the original graph has
            return traced(*args, **kwargs)
        types = None if kwargs else eager_types(args)
        fn = by_types.get(types)
        if fn is not None:
            return fn(*args)
        cf = traced.get_concrete_function(*args, **kwargs)
        fn = optimized.get(id(cf))
        if fn is None:
            model = _optimize(python_root(func), {"serving_default": cf}, None, None, Options())
            fn = (cf, model.signatures["serving_default"], model)
            optimized[id(cf)] = fn
        flat = flat_inputs(traced, cf, args, kwargs)
        if types is not None and len(flat) == len(args) and all(t is a for t, a in zip(flat, args)):
            if len(by_types) >= 256:  # one entry per shape seen: bounded for any batch sizes
                by_types.clear()
            by_types[types] = fn[1]  # (the arguments are the graph's inputs as they are)
        return fn[1](*flat)

    wrapper.python_function = func
    wrapper.tf_function = traced
    wrapper.optimized = optimized
    return wrapper

"""TensorFlow objects in and out: concrete functions -> GraphDef, and back to a function that
captures the same variables (never frozen: real embedding tables exceed protobuf's 2 GB)."""
from __future__ import annotations

import collections
import dis
import inspect
import re
import weakref

import tensorflow as tf


def collect_variables(*roots):
    """Every tf.Variable reachable from ``roots`` (modules, loaded SavedModels, functions)."""
    found = {}
    for root in roots:
        if root is None:
            continue
        if isinstance(root, tf.Variable):
            found[id(root)] = root
            continue
        for v in getattr(root, "variables", None) or ():
            found[id(v)] = v
        try:
            for obj in tf.train.TrackableView(root).descendants():
                if isinstance(obj, tf.Variable):
                    found[id(obj)] = obj
        except (TypeError, AttributeError, ValueError):
            pass
    return list(found.values())


def function_io(cf):
    """(input placeholders, their public names, output tensors) of a concrete function."""
    n_user = len(cf.inputs) - len(cf.captured_inputs)
    placeholders = cf.inputs[:n_user]
    args, kwargs = cf.structured_input_signature or ((), {})  # None for pruned GraphDef functions
    # A signature's keywords are its public input names; positional inputs use their specs' names.
    # (A Python default, `lambda x, layer=layer: ...`, flattens to a non-spec with no name.)
    labelled = [(getattr(s, "name", None), s) for s in tf.nest.flatten(args, expand_composites=True)]
    labelled += [(key if isinstance(kwargs[key], tf.TensorSpec) else getattr(s, "name", None), s)
                 for key in sorted(kwargs) for s in tf.nest.flatten(kwargs[key], expand_composites=True)]
    labels = [label for label, s in labelled if isinstance(s, tf.TensorSpec)]
    parameters = list(cf.function_type.parameters) if cf.function_type else []
    if len(parameters) == len(placeholders):  # one tensor per parameter: keep the Python names
        labels = parameters
    names = []
    for i, ph in enumerate(placeholders):
        name = labels[i] if i < len(labels) and labels[i] else ph.op.name
        names.append(_identifier(name, i, names))
    return placeholders, names, list(cf.outputs)


def _is_output_slot(x):
    # A traced function's structure holds graph tensors; a loaded signature's holds TensorSpecs.
    return isinstance(x, (tf.Tensor, tf.TensorSpec))


def _identifier(name, i, taken):
    name = re.sub(r"\W", "_", name) or f"arg{i}"
    if name[0].isdigit():
        name = "_" + name
    while name in taken:
        name += "_"
    return name


def variable_shapes(cf, variables):
    """Captured-variable placeholder name -> (dtype enum, shape), for shape inference."""
    by_handle = {id(v.handle): v for v in variables}
    shapes = {}
    for external, internal in cf.graph.captures:
        var = by_handle.get(id(external))
        if var is not None:
            shapes[internal.op.name] = (var.dtype.as_datatype_enum, var.shape.as_list())
    return shapes


def rebuild(cf, graph_def, variables, fetches):
    """A new ConcreteFunction running ``graph_def`` in place of ``cf``'s body: same inputs (names
    included), same nested outputs (``fetches``: their refs in ``graph_def``), the same
    variables captured by handle."""
    placeholders, names, outputs = function_io(cf)
    by_handle = {id(v.handle): v for v in variables}
    captures = list(cf.graph.captures)
    fetches = [f if ":" in f else f + ":0" for f in fetches]
    ph_names = [p.name for p in placeholders]
    structure = cf.structured_outputs

    used = {ref.lstrip("^").split(":")[0] for nd in graph_def.node for ref in nd.input}

    def body(*args, **kwargs):
        input_map = dict(zip(ph_names, list(args) + [kwargs[n] for n in names[len(args):]]))
        for external, internal in captures:
            if internal.op.name not in used:  # read only by fused ops now (a frozen table)
                continue
            var = by_handle.get(id(external))
            # tf.identity turns the eager handle into a capture of this function's graph.
            input_map[internal.name] = tf.identity(var.handle if var is not None else external)
        outs = tf.graph_util.import_graph_def(graph_def, input_map=input_map,
                                              return_elements=fetches, name="blade")
        for out, original in zip(outs, outputs):  # a fused op's shape function knows only ranks
            if out.shape.is_compatible_with(original.shape):
                out.set_shape(original.shape)
        flat = iter(outs)
        slots = [next(flat) if _is_output_slot(x) else x
                 for x in tf.nest.flatten(structure, expand_composites=True)]
        return tf.nest.pack_sequence_as(structure, slots, expand_composites=True)

    # Real parameter names, so the function is callable with the original keywords, and their
    # kinds: a signature's inputs are keyword-only, and a positional call, which stock TF
    # refuses, would bind them in sorted-name order.
    kinds = _parameter_kinds(cf, len(names))
    body.__signature__ = inspect.Signature([inspect.Parameter(n, k) for n, k in zip(names, kinds)])
    specs = [tf.TensorSpec(p.shape, p.dtype, name=n) for p, n in zip(placeholders, names)]
    n_positional = kinds.count(inspect.Parameter.POSITIONAL_OR_KEYWORD)
    # input_signature cannot hold keyword-only parameters: trace with the specs as arguments
    fn = tf.function(body, autograph=False)
    concrete = fn.get_concrete_function(*specs[:n_positional], **dict(zip(names[n_positional:], specs[n_positional:])))
    if n_positional == 0 and getattr(cf, "_num_positional_args", None) is not None:
        # TF's flat-signature path accepts this many positional inputs (a SavedModel signature:
        # none, or its only one); left at its default, every input could come positionally
        concrete._num_positional_args = min(cf._num_positional_args, len(names))
    # tf.saved_model.save keys a signature's inputs by these (the input_signature's spec names, a
    # loaded signature's keys), not by parameter names: a serving request names what stock wrote
    keywords = getattr(cf, "_arg_keywords", None)
    if keywords is not None and len(keywords) == len(names) and list(concrete._arg_keywords) == names:
        concrete._arg_keywords = list(keywords)
    _register_fallbacks(graph_def)
    return fn, concrete


def _parameter_kinds(cf, n):
    """``cf``'s parameter kinds where it has one parameter an input (as function_io names them),
    positional-or-keyword followed by keyword-only; else all positional-or-keyword."""
    positional, keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    parameters = list(cf.function_type.parameters.values()) if cf.function_type else []
    kinds = [p.kind for p in parameters]
    if len(kinds) != n or any(k not in (positional, keyword) for k in kinds) or kinds != sorted(kinds):
        return [positional] * n
    return kinds


def _register_fallbacks(graph_def):
    """A fused op's fallback function is named only in an attr, so calling the function does not
    register it with the runtime (a SavedModel carries it in its library): register it here."""
    from tensorflow.python.eager import context
    from ..passes.fallback import is_fallback
    ctx = context.context()
    for fdef in graph_def.library.function:
        if is_fallback(fdef.signature.name) and not ctx.has_function(fdef.signature.name):
            ctx.add_function_def(fdef)


_STATIC_TABLES = {"StaticHashTable", "StaticHashTableV1", "StaticVocabularyTable", "StaticVocabularyTableV1"}


def _is_static_table(obj) -> bool:
    """Immutable once initialised: a static table class, a hash-bucket wrapper around one, or a
    resource restored from a SavedModel whose creator builds a HashTableV2 (not a mutable table)."""
    kind = type(obj).__name__
    if kind in _STATIC_TABLES:
        return True
    if kind == "IdTableWithHashBuckets":
        return type(getattr(obj, "_table", None)).__name__ in _STATIC_TABLES
    creator = getattr(obj, "_create_resource", None)
    if creator is None or not hasattr(creator, "concrete_functions"):
        return False
    ops = {op.type for cf in creator.concrete_functions for op in cf.graph.get_operations()}
    return "HashTableV2" in ops and not any("Mutable" in op for op in ops)


def python_root(py_func, depth=3):
    """A tf.Module holding the trackable objects (layers, modules, tables) that a tf.function's
    Python code refers to: its closure cells, the globals its bytecode loads, a bound method's
    self (tf.function keeps it behind a weakref), and the same of plain functions it calls
    (``depth`` levels). A bare tf.function has no trackable root, but its static tables and
    variables live in these; None when there are none (or anything odd stops the search)."""
    from tensorflow.python.trackable.base import Trackable
    found, seen = {}, set()

    def referents(obj, level):
        """(object, levels left) pairs that ``obj`` refers to; Trackables and leaves end a path."""
        if isinstance(obj, Trackable):
            found[id(obj)] = obj
            return
        if isinstance(obj, (list, tuple, dict)):
            items = obj.values() if isinstance(obj, dict) else obj
            if len(obj) <= _MAX_CONTAINER and level > 0:
                yield from ((item, level - 1) for item in items)
            return
        if level == 0:
            return
        if inspect.ismethod(obj):
            yield obj.__self__, level
            obj = obj.__func__
        if inspect.isfunction(obj):
            for cell in obj.__closure__ or ():
                try:
                    yield cell.cell_contents, level - 1
                except ValueError:  # an empty cell
                    pass
            for name in _loaded_globals(obj.__code__):
                if name in obj.__globals__:
                    yield obj.__globals__[name], level - 1

    def search(start):
        # Breadth first, so an object is expanded with the most levels any path leaves it:
        # depth first let a long path reach a list at its last level, mark it seen, and hide
        # the table a short path to the same list would have found.
        queue = collections.deque([(start, depth)])
        while queue:
            obj, level = queue.popleft()
            if isinstance(obj, weakref.ref):
                obj = obj()
            if obj is None or id(obj) in seen or isinstance(obj, (str, bytes, int, float)):
                continue
            seen.add(id(obj))
            queue.extend(referents(obj, level))

    try:
        search(py_func)
    except Exception:  # noqa: BLE001 - user objects can raise anywhere; then there is no root
        return None
    if not found:
        return None
    root = tf.Module()
    root.referenced = list(found.values())
    return root


_MAX_CONTAINER = 1000  # lists and dicts longer than this are data, not layers


def _loaded_globals(code):
    """Names ``code`` (and the code of functions it defines) loads as globals; attribute names,
    which co_names also lists, are not globals."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    for const in code.co_consts:
        if inspect.iscode(const):
            names += _loaded_globals(const)
    return list(dict.fromkeys(names))  # in code order: a set's order changed with PYTHONHASHSEED


def _descendants(root):
    """The trackable objects in ``root``'s object graph (none when there is no graph to walk)."""
    if root is None:
        return []
    try:
        return tf.train.TrackableView(root).descendants()
    except (TypeError, AttributeError, ValueError):
        return []


def static_tables(root):
    """The static tables (trackable objects) in ``root``'s object graph."""
    return [obj for obj in _descendants(root) if _is_static_table(obj)]


def captured_resources(root, functions):
    """The trackable resources (tables, mutable or not; not variables) in ``root``'s object graph
    whose handles ``functions`` capture: a SavedModel must track each one its functions read."""
    captured = {id(external) for cf in functions for external, _ in cf.graph.captures}
    found = []
    for obj in _descendants(root):
        if isinstance(obj, tf.Variable):
            continue
        try:
            if id(obj.resource_handle) in captured:
                found.append(obj)
        except (AttributeError, ValueError, RuntimeError):
            continue
    return found


def static_table_handles(root, cf):
    """Captured-placeholder name -> table handle, for the static tables ``cf`` looks up (their
    contents can be frozen into a kernel)."""
    handles = {}
    for table in static_tables(root):
        try:
            handles[id(table.resource_handle)] = table.resource_handle
        except (AttributeError, ValueError, RuntimeError):
            continue
    return {internal.op.name: external for external, internal in cf.graph.captures if id(external) in handles}


def export_table(handle, key_dtype: int, value_dtype: int):
    """(keys, values) of a table as NumPy arrays (strings as bytes objects)."""
    keys, values = tf.raw_ops.LookupTableExportV2(table_handle=handle, Tkeys=tf.dtypes.as_dtype(key_dtype),
                                                  Tvalues=tf.dtypes.as_dtype(value_dtype))
    return keys.numpy(), values.numpy()

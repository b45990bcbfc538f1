"""A faster Python call for the functions tf_blade returns.

TF's ``ConcreteFunction.__call__`` binds every argument to the function's type in Python
(canonicalize, cast to each TensorSpec, subtype checks) before it runs the graph: for criteo-fc's
26 string inputs that is ~0.55 ms a call, five times what running a do-nothing function of those
inputs costs (``_call_flat``, ~0.1 ms). A function whose parameters are all plain
tensors takes a shortcut here: when it runs eagerly and every argument is an eager tensor of its
parameter's dtype and a compatible shape, the tensors go straight to the function. When nothing
can record a gradient, that is the function op executed eagerly as ``_call_flat`` ends up doing,
without its Python wrappers (30-66 us of a criteo-fc call, 8-18% of it at batch 1 to 512), or,
for a function that is one fused op and nothing else, that op executed eagerly (``_RunOp``);
else ``_call_flat`` itself, with TF's gradient-tape handling. Any other call (numpy values, Python
numbers, a wrong dtype or shape, graph mode, unknown keywords) takes TF's own path, with TF's
conversions and errors.
"""
from __future__ import annotations

from itertools import chain

from tensorflow.python.eager import cancellation, context, execute, record
from tensorflow.python.eager.polymorphic_function import function_type_utils
from tensorflow.python.eager.polymorphic_function.atomic_function import InterpolateRuntimeError
from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction
from tensorflow.python.framework.ops import EagerTensor
from tensorflow.python.framework.tensor import TensorSpec


class FastCall:
    """Mixed into a ConcreteFunction's class by ``with_fast_call`` (isinstance ConcreteFunction
    still holds, saving works): plain-tensor calls skip TF's Python argument binding."""

    def __call__(self, *args, **kwargs):
        flat = _matching_tensors(self._tf_blade_params, args, kwargs)
        if flat is None:
            return super().__call__(*args, **kwargs)
        run = self._tf_blade_run
        if run is None or record.could_possibly_record() or cancellation.context() is not None:
            return self._call_flat(flat, self.captured_inputs)
        return run(flat + self.captured_inputs)


class _RunFunction:
    """What ``_call_flat`` does for eager tensors when no tape or accumulator can record and no
    cancellation scope is open: the function op executed with this thread's call options, its
    errors interpolated as TF's, its outputs packed."""

    def __init__(self, atomic):
        self.atomic = atomic
        self.name = atomic.name.decode()
        self.n_outputs = len(atomic.function_type.flat_outputs)
        self.attrs = (None, ())  # (the call options they were made from, the op's attrs)

    @classmethod
    def of(cls, cf):
        """The runner of ``cf``'s function, or None where ``_call_flat`` does more than run it:
        captured control dependencies, outputs with handle data (resources, variants), none."""
        atomic = getattr(cf, "_inference_function", None)
        options = getattr(atomic, "_call_options", None)
        if options is None or options.control_captures or not atomic.function_type.flat_outputs:
            return None
        if any(t.dtype._handle_data for t in atomic.function_type.flat_outputs):
            return None
        return cls(atomic)

    def __call__(self, tensors):
        ctx = self.atomic._bound_context
        options = ctx.function_call_options  # per thread, and callers may change it
        key = (options.executor_type, options.config_proto_serialized)
        made = self.attrs
        if made[0] != key:
            made = self.attrs = (key, tuple(chain(*options.as_attrs().items())))
        with InterpolateRuntimeError(self.atomic):
            outputs = execute.execute(self.name, num_outputs=self.n_outputs, inputs=tensors, attrs=made[1], ctx=ctx)
        return self.atomic.function_type.pack_output(outputs)


class _RunOp:
    """A function that is one fused op and nothing else (its inputs reach it through Identity ops
    at most, its outputs leave it so): that op executed eagerly on this thread, without TF's
    function runtime, whose graph executor and inter-op hop cost criteo-fc about half of a call
    at batch 1 (0.165 -> 0.081 ms) and a fifth at 512 (0.595 -> 0.474 ms). A call that fails is
    made again through the function, so its errors are TF's own (and its fallback, if the op needs
    one, runs where the function runs it). The op goes without its cluster spec, which the native
    op gets once, by cluster key (``_spec_apart``)."""

    def __init__(self, function, op, n_outputs, inputs, outputs, attrs):
        self.function, self.op, self.n_outputs = function, op, n_outputs
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs
        self.failed = False  # the op failed where the function did not: the function from then on

    @classmethod
    def of(cls, cf, function):
        """The runner for ``cf`` when it is one BladeFusedCall (``function`` runs it as a function
        when the op fails), else None."""
        graph_inputs = {t.ref(): i for i, t in enumerate(cf.graph.inputs)}
        ops = cf.graph.get_operations()
        fused = [op for op in ops if op.type == "BladeFusedCall"]
        if function is None or len(fused) != 1 or any(op.type not in ("Placeholder", "Identity") for op in ops
                                                      if op is not fused[0]):
            return None
        op = fused[0]
        inputs = [graph_inputs.get(_through_identities(t).ref()) for t in op.inputs]
        outputs = [_through_identities(t) for t in cf.outputs]
        attrs = _attrs(op)
        if None in inputs or attrs is None or any(t.op is not op for t in outputs):
            return None
        return cls(function, op.type, len(op.outputs), inputs, [t.value_index for t in outputs], _spec_apart(attrs))

    def __call__(self, tensors):
        ctx = context.context()
        if self.failed or ctx.function_call_options.executor_type:  # a caller's executor runs functions
            return self.function(tensors)
        try:
            outputs = execute.execute(self.op, num_outputs=self.n_outputs, inputs=[tensors[i] for i in self.inputs],
                                      attrs=self.attrs, ctx=ctx)
        except Exception:
            result = self.function(tensors)  # TF's error; a success means the op cannot run here
            self.failed = True
            return result
        return self.function.atomic.function_type.pack_output([outputs[k] for k in self.outputs])


def _spec_apart(attrs):
    """The op's ``attrs`` with its cluster spec left out, the native op given it by cluster key
    instead: TF copies, serializes and hashes every attr of an eager op on every call, and
    criteo-fc's spec text is 171 KB (the whole call at batch 1 0.228 -> 0.164 ms, at 512
    0.968 -> 0.870 ms)."""
    from .runtime import native
    named = dict(zip(attrs[::2], attrs[1::2]))
    native.load().register_cluster(named["cluster_key"], named["cluster"])
    return tuple(b"" if k % 2 and attrs[k - 1] == "cluster" else v for k, v in enumerate(attrs))


def _through_identities(tensor):
    while tensor.op.type == "Identity":
        tensor = tensor.op.inputs[0]
    return tensor


def _attrs(op):
    """The op's attrs as execute takes them (name, value, ...), or None for a kind it does not hold."""
    flat = []
    for name, value in op.node_def.attr.items():
        if name.startswith("_"):  # graph-building annotations, not the op's attrs
            continue
        kind = value.WhichOneof("value")
        if kind in ("s", "i", "b", "f", "type"):
            flat += [name, getattr(value, kind)]
        elif kind == "list":
            kinds = [k for k in ("s", "i", "b", "f", "type") if len(getattr(value.list, k))]
            if len(kinds) > 1:
                return None
            flat += [name, list(getattr(value.list, kinds[0])) if kinds else []]
        else:
            return None
    return tuple(flat)


_FAST_CLASSES = {}  # a ConcreteFunction class -> it with FastCall mixed in


def with_fast_call(cf: ConcreteFunction) -> ConcreteFunction:
    """``cf`` itself, given the shortcut when its parameters are all plain tensors and its class
    calls as ConcreteFunction does (a function tf_blade made or loaded: callers hold no other
    reference to it). A restored signature (keyword-only parameters) qualifies too."""
    cls = type(cf)
    params = _tensor_params(cf) if isinstance(cf, ConcreteFunction) else None
    if params is not None and not isinstance(cf, FastCall) and cls.__call__ is ConcreteFunction.__call__:
        if cls not in _FAST_CLASSES:
            _FAST_CLASSES[cls] = type(f"FastCall{cls.__name__}", (FastCall, cls), {"__module__": __name__})
        cf._tf_blade_params = params
        function = _RunFunction.of(cf)
        cf._tf_blade_run = _RunOp.of(cf, function) or function
        cf.__class__ = _FAST_CLASSES[cls]
    return cf


def _tensor_params(cf):
    """(leading positional parameters, [(name, dtype enum, rank or None, ((axis, size) of its
    known dims))] of ``cf``'s parameters, their checks as ``_matching_tensors`` makes them: (dtype
    enums, positions of ranked parameters or None for all, their ranks, [(position, known dims)])),
    or None unless every one is a required TensorSpec, positional-or-keyword or (after those)
    keyword-only."""
    function_type = cf.function_type
    if function_type is None:
        return None
    positional, params = 0, []
    for p in function_type.parameters.values():
        spec = p.type_constraint
        if p.kind is p.POSITIONAL_OR_KEYWORD and positional == len(params):
            positional += 1
        elif p.kind is not p.KEYWORD_ONLY:
            return None
        if p.optional or type(spec) is not TensorSpec:
            return None
        rank = spec.shape.rank
        known = () if rank is None else tuple((a, d) for a, d in enumerate(spec.shape.as_list()) if d is not None)
        params.append((p.name, spec.dtype.as_datatype_enum, rank, known))
    ranked = [k for k, p in enumerate(params) if p[2] is not None]
    checks = ([p[1] for p in params], None if len(ranked) == len(params) else ranked, [params[k][2] for k in ranked],
              [(k, params[k][3]) for k in ranked if params[k][3]])
    return positional, params, checks


def _matching_tensors(signature, args, kwargs):
    """The arguments in parameter order when all are eager tensors that TF's binding would pass
    through unchanged; else None."""
    positional, params, (dtypes, ranked, ranks, known) = signature
    if len(args) + len(kwargs) != len(params) or len(args) > positional or not context.executing_eagerly():
        return None
    flat = list(args)
    if kwargs:
        for name, _, _, _ in params[len(args):]:
            value = kwargs.get(name)
            if value is None:
                return None
            flat.append(value)
    # A list at a time, through EagerTensor's own methods (which refuse anything else with a
    # TypeError): a loop over criteo-fc's 26 arguments took 11 us of a ~150 us call, this 2.5 us.
    try:
        if list(map(_DTYPE_ENUM, flat)) != dtypes:
            return None
        if list(map(_RANK, flat if ranked is None else [flat[k] for k in ranked])) != ranks:
            return None
    except TypeError:
        return None
    for k, dims in known:
        shape = flat[k]._shape_tuple()
        for axis, size in dims:
            if shape[axis] != size:
                return None
    return flat


_DTYPE_ENUM, _RANK = EagerTensor._datatype_enum, EagerTensor._rank


def eager_types(args):
    """A hashable (dtype, shape) per argument when all are eager tensors and this runs eagerly,
    else None: @tf_blade.function maps it to the function tf.function chose for such arguments
    (positional calls only: keywords take ``flat_inputs``)."""
    if not context.executing_eagerly():
        return None
    types = []
    for value in args:
        if not isinstance(value, EagerTensor):
            return None
        types.append((value.dtype, value._shape_tuple()))
    return tuple(types)


def flat_inputs(traced, cf: ConcreteFunction, args, kwargs):
    """The tensors that calling tf.function ``traced`` with (args, kwargs) hands ``cf``'s graph,
    in its input order: TF's own two bindings (the Python function's, defaults filled in, then
    the concrete function's; keywords go to their parameters' places, composites to their
    components)."""
    bound = function_type_utils.canonicalize_function_inputs(
        args, kwargs, traced._function_type, traced._default_values, traced._is_pure)
    return cf.function_type.unpack_inputs(cf.function_type.bind(*bound.args, **bound.kwargs))

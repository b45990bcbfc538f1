"""A faster Python call for the functions tf_blade returns.

TF's ``ConcreteFunction.__call__`` binds every argument to the function's type in Python
(canonicalize, cast to each TensorSpec, subtype checks) before it runs the graph: for criteo-fc's
26 string inputs that is ~0.55 ms a call, ten times what running the function costs
(``_call_flat``, ~0.05 ms; docs/benchmarks/suite.md). A function whose parameters are all plain
tensors takes a shortcut here: when it runs eagerly and every argument is an eager tensor of its
parameter's dtype and a compatible shape, the tensors go straight to ``_call_flat`` (which keeps
TF's gradient-tape handling). Any other call (numpy values, Python numbers, a wrong dtype or
shape, graph mode, unknown keywords) takes TF's own path, with TF's conversions and errors.
"""
from __future__ import annotations

from tensorflow.python.eager import context
from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction
from tensorflow.python.framework.ops import EagerTensor
from tensorflow.python.framework.tensor import TensorSpec


class FastCallFunction(ConcreteFunction):
    """A ConcreteFunction (isinstance holds, saving works) whose plain-tensor calls skip TF's
    Python argument binding. Made by ``with_fast_call``, never constructed."""

    def __call__(self, *args, **kwargs):
        flat = _matching_tensors(self._tf_blade_params, args, kwargs)
        if flat is None:
            return super().__call__(*args, **kwargs)
        return self._call_flat(flat, self.captured_inputs)


def with_fast_call(cf: ConcreteFunction) -> ConcreteFunction:
    """``cf`` itself, given the shortcut when its parameters are all plain tensors (a function
    tf_blade made: callers never hold another reference to it)."""
    params = _tensor_params(cf)
    if params is not None and type(cf) is ConcreteFunction:
        cf._tf_blade_params = params
        cf.__class__ = FastCallFunction
    return cf


def _tensor_params(cf):
    """[(name, dtype enum, rank or None, ((axis, size) of its known dims))] of ``cf``'s parameters, or
    None unless every one is a required positional-or-keyword TensorSpec."""
    function_type = cf.function_type
    if function_type is None:
        return None
    params = []
    for p in function_type.parameters.values():
        spec = p.type_constraint
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.optional or type(spec) is not TensorSpec:
            return None
        rank = spec.shape.rank
        known = () if rank is None else tuple((a, d) for a, d in enumerate(spec.shape.as_list()) if d is not None)
        params.append((p.name, spec.dtype.as_datatype_enum, rank, known))
    return params


def _matching_tensors(params, args, kwargs):
    """The arguments in parameter order when all are eager tensors that TF's binding would pass
    through unchanged; else None."""
    if len(args) + len(kwargs) != len(params) or len(args) > len(params) or not context.executing_eagerly():
        return None
    flat = list(args)
    if kwargs:
        for name, _, _, _ in params[len(args):]:
            value = kwargs.get(name)
            if value is None:
                return None
            flat.append(value)
    for value, (_, dtype, rank, known) in zip(flat, params):
        if not isinstance(value, EagerTensor) or value._datatype_enum() != dtype:
            return None
        if rank is not None:
            shape = value._shape_tuple()
            if len(shape) != rank:
                return None
            for axis, size in known:
                if shape[axis] != size:
                    return None
    return flat


def eager_types(args):
    """A hashable (dtype, shape) per argument when all are eager tensors and this runs eagerly,
    else None: @tf_blade.function maps it to the function tf.function chose for such arguments."""
    if not context.executing_eagerly():
        return None
    types = []
    for value in args:
        if not isinstance(value, EagerTensor):
            return None
        types.append((value.dtype, value._shape_tuple()))
    return tuple(types)

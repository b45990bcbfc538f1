"""A library kernel compiles once per signature of dtypes and ranks. Numba compiles a jitted
function once per literal argument: a bare 0 passed from jitted code is Literal[int](0), not
int64. A literal where other callers pass an int64 compiles the kernel twice (reduce_runs took
1.2 s more of a cold start), and one in a model's generated code compiles the kernel again for
each new value (a new model pays for it although the library is cached). Nor does a kernel
assign an array to a slice (SCALAR_FILLS says why)."""
import ast
import importlib
import inspect
import pkgutil
import textwrap

import pytest
from numba.core.registry import CPUDispatcher

import tf_blade.kernels as kernels
from conftest import fused_specs
from tf_blade.codegen.generate import generate
from test_lowerings_fused import glue  # one graph of most lowerings
from tf_blade.examples import (column_kinds_model, criteo_feature_model, criteo_wdl_model, keras_layers_model,
                               keras_prep_model)

# Take a literal on purpose, as their last argument: a packet width (the reduce lowering says
# why), one of two values.
LITERAL_LAST = {"float_sum_as_tf", "float_prod_as_tf", "float_mean_as_tf", "reduce_sum", "reduce_prod"}


def _int_literals(args):
    return [ast.unparse(a) for a in args
            if isinstance(a, ast.Constant) and type(a.value) is int
            or isinstance(a, ast.UnaryOp) and isinstance(a.operand, ast.Constant) and type(a.operand.value) is int]


def _library_kernels():
    """(module, its namespace, name, parsed source) of each jitted function of the kernel library."""
    for info in pkgutil.iter_modules(kernels.__path__):
        if info.name.startswith("cuda_"):  # numba.cuda device functions, typed by their kernels
            continue
        module = importlib.import_module(f"{kernels.__name__}.{info.name}")
        names = vars(module)
        for name, fn in names.items():
            if isinstance(fn, CPUDispatcher) and fn.__module__ == module.__name__:
                yield module, names, name, ast.parse(textwrap.dedent(inspect.getsource(fn.py_func)))


# A slice assignment of an array (``a[i:j] = b``, ``a[...] = b``) links Numba's shape-mismatch
# check, whose message formatting (Numba's unicode, never cached on disk) compiled for ~2.2 s in
# each process that typed one: 14.3-16.7 -> 11.2-11.7 s of a new wide & deep's optimize() on
# criteo-fc's library, without the compile child. These fill a slice with a number the kernel reads.
SCALAR_FILLS = {"out[i]", "identity", "src[at]"}


def _array_slice_assignments(tree):
    return [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Subscript) and any(isinstance(s, ast.Slice) or
                                                         isinstance(s, ast.Constant) and s.value is Ellipsis
                                                         for s in ast.walk(t.slice)) for t in node.targets)
            and not isinstance(node.value, ast.Constant) and ast.unparse(node.value) not in SCALAR_FILLS]


def test_library_kernels_assign_no_array_to_a_slice():
    found = [f"{module.__name__}.{name}: {text}" for module, _, name, tree in _library_kernels()
             for text in _array_slice_assignments(tree)]
    assert not found


def test_library_kernels_pass_no_integer_literal_to_a_kernel():
    found = []
    for module, names, name, tree in _library_kernels():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = names.get(node.func.id)
                # an inlined helper is typed inside its caller: a literal compiles nothing apart
                if isinstance(callee, CPUDispatcher) and callee.targetoptions.get("inline") != "always" \
                        and _int_literals(node.args):
                    found.append(f"{module.__name__}.{name}: {ast.unparse(node)}")
    assert not found


@pytest.mark.parametrize("build", [lambda: criteo_feature_model(3, dim=4).serve,
                                   lambda: criteo_wdl_model(3, 2, dim=4, hidden=(8,)).serve,
                                   lambda: keras_prep_model(3, dim=4, hidden=(8,)).serve,
                                   lambda: column_kinds_model().serve, lambda: keras_layers_model().serve,
                                   lambda: glue],
                         ids=["criteo-fc", "criteo-wdl", "keras-prep", "column-kinds", "keras-layers", "lowerings"])
def test_generated_code_passes_no_literal_to_a_kernel_and_no_array_to_a_slice(build):
    found = []
    for spec in fused_specs(build(), bridge="native"):
        source, templates = generate(spec)
        for text in (source, *templates.values()):
            found += _array_slice_assignments(ast.parse(text))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) and node.func.value.id.startswith("k_"):
                    args = node.args[:-1] if node.func.attr in LITERAL_LAST else node.args
                    if _int_literals(args):
                        found.append(ast.unparse(node))
    assert found == []


# Per kind: four columns' own parameters (a normalizer's mean and scale, bucket boundaries, a
# vocabulary, a cross's bucket count, a Keras Normalization's mean and variance), as trained and
# as retrained.
_PARAMETERS = {
    "normalized": ([(0.5 * i, 1.0 + i) for i in range(4)], [(0.25 - i, 3.0 + i) for i in range(4)]),
    "bucketized": ([[-1.0 - i, 0.0, 2.5 * i + 1.0, 10.0 + i] for i in range(4)],
                   [[-2.0 - i, 0.5, 1.5 * i + 1.0, 12.0 + i] for i in range(4)]),
    "vocabulary": ([[f"a{i}", "b", f"c{i}"] for i in range(4)], [[f"a{i}", f"d{i}", "e", "f"] for i in range(4)]),
    "crossed": ([50 + i for i in range(4)], [70 + 2 * i for i in range(4)]),
    "keras-normalization": ([(1.0 + i, 2.0 + i) for i in range(4)], [(i - 3.0, 0.5 + i) for i in range(4)]),
}


def _columns(kind, parameters):
    """(function of the inputs making a [batch, n] tensor, input specs) of one column of ``kind``
    per entry of ``parameters``; inputs are named after the kind."""
    import tensorflow as tf
    import tf_keras

    fc = tf.feature_column
    dtype = tf.string if kind in ("vocabulary", "crossed") else tf.float32
    names = [f"{kind}_{c}{i}" for i in range(len(parameters)) for c in ("xy" if kind == "crossed" else "x")]
    specs = {n: tf.TensorSpec([None, 1], dtype) for n in names}
    if kind == "keras-normalization":
        layers = [tf_keras.layers.Normalization(mean=m, variance=v) for m, v in parameters]
        return lambda x: tf.concat([layer(x[n]) for n, layer in zip(names, layers)], 1), specs, layers
    columns = []
    for i, p in enumerate(parameters):
        x, y = f"{kind}_x{i}", f"{kind}_y{i}"
        if kind == "normalized":
            columns.append(fc.numeric_column(x, normalizer_fn=(lambda m, s: lambda v: (v - m) * s)(*p)))
        elif kind == "bucketized":
            columns.append(fc.bucketized_column(fc.numeric_column(x), boundaries=p))
        elif kind == "crossed":
            columns.append(fc.indicator_column(fc.crossed_column([x, y], hash_bucket_size=p)))
        else:
            columns.append(fc.indicator_column(fc.categorical_column_with_vocabulary_list(x, p)))
    layer = tf_keras.layers.DenseFeatures(columns)
    return lambda x: layer({n: x[n] for n in names}), specs, [layer]


def _columns_function(parameters_by_kind):
    """A tf.function of the columns of each kind (``_columns``), concatenated; its module holds
    the layers (where optimize() finds their vocabulary tables)."""
    import tensorflow as tf

    made = [_columns(kind, parameters) for kind, parameters in parameters_by_kind.items()]
    module = tf.Module()
    module.layers = [layer for _, _, layers in made for layer in layers]
    module.calls = [f for f, _, _ in made]
    specs = {n: s for _, kind_specs, _ in made for n, s in kind_specs.items()}
    module.serve = tf.function(lambda x: tf.concat([f(x) for f in module.calls], 1), input_signature=[specs])
    return module.serve


@pytest.mark.parametrize("kind", sorted(_PARAMETERS))
def test_a_model_retrained_needs_no_template_of_its_own(kind):
    """A column's constants, bucket boundaries and bucket counts are values its part is given, not
    code (parts.lifted_consts, Lowering.array_attrs and runtime_attrs): the model retrained with
    other ones makes the templates it made (a template is a compile). x + 0.0 keeps its constant
    in the code (test_simplify.py)."""
    own, retrained = _PARAMETERS[kind]
    templates = [{name for spec in fused_specs(_columns_function({kind: parameters}), bridge="native")
                  for name in generate(spec)[1]} for parameters in (own, retrained)]
    assert templates[0] and templates[0] == templates[1]


def test_columns_with_their_own_parameters_give_tfs_bits():
    """Each column's own constants, boundaries, vocabulary and bucket count reach its part (many
    run as one template, in a group): every kind of _PARAMETERS in one model, one compile."""
    import numpy as np
    import tensorflow as tf

    import tf_blade
    fn = _columns_function({kind: own for kind, (own, _) in _PARAMETERS.items()})
    opt = tf_blade.optimize(fn, bridge="native")
    assert opt.report.functions["serving_default"]["tf_ops_after"] == 0, str(opt.report)
    rng = np.random.default_rng(7)
    pool = np.array([b"a0", b"a1", b"b", b"c3", b"", b"zz"], dtype=object)
    for rows in (0, 1, 33):
        x = {}
        for name, spec in fn.input_signature[0].items():
            if spec.dtype == tf.string:
                x[name] = tf.constant(rng.choice(pool, (rows, 1)))
            else:
                values = (rng.standard_normal((rows, 1)) * 8).astype(np.float32)
                values[::5] = 0.0  # on a boundary
                x[name] = tf.constant(values)
        assert opt(x).numpy().tobytes() == fn(x).numpy().tobytes(), rows

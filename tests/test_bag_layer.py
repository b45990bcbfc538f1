"""A feature layer of hashed string columns as one op (feature_column/bag_layer.py,
kernels/bag_layer.py): against TF's DenseFeatures and against the per-column string bag."""
import contextlib
import json
import re

import numpy as np
import pytest
import tensorflow as tf
from numba import cfunc, njit, types
from numba.typed import List

import tf_blade
from conftest import fused_specs, op_counts, running_nodes
from test_string_bag import POOL
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.examples import CRITEO_BUCKETS, column_names, criteo_feature_model, criteo_wdl_model, keras_prep_model, synthetic_batch
from tf_blade.kernels import bag_layer
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.string_bag import string_bag
from tf_blade.kernels.strings import tstrings_from_bytes
from tf_blade.runtime import compiler

N_COLUMNS = 5


@pytest.fixture(scope="module", params=["native", "numpy"])
def layer_model(request):
    """(stock, optimized): the native op plans the layer and fills TF's output buffer in place
    (generate.py's writers); the numpy bridge runs the whole layer in the body."""
    module = criteo_feature_model(N_COLUMNS, dim=4)
    stock = module.serve.get_concrete_function()
    optimized = tf_blade.optimize(module.serve, bridge=request.param).signatures["serving_default"]
    return stock, optimized


def test_native_entry_computes_a_layer_of_op_inputs_by_a_library_call():
    # Every input of criteo-fc's layer is an input of the op: the entry calls the library's
    # direct cfunc by address (no per-model code per column, none of the layer's code linked into
    # the entry) and runs no steps.
    from tf_blade.codegen.generate import generate
    spec = _spec(criteo_feature_model(2, dim=4))
    source, _ = generate(spec)
    entry = source[source.index("def entry("):]
    assert "run_direct(" in entry and ".plan(" not in entry and ".run_task(" not in entry and "outs = " not in entry
    assert "fill_into(" not in entry and "carray(ptr_from_int(in_ptrs" not in entry
    # so importing the module compiles no part's task: only the NumPy bridge's body runs them
    assert not _compiled_at_import(source) and "def compile_tasks():" in source


_COUNT_COMPILES = r"""
import tf_blade
from numba.core.event import install_recorder
from tf_blade.examples import criteo_feature_model

model = criteo_feature_model(3, dim=4)
with install_recorder("numba:compile") as compiles:
    tf_blade.optimize(model.serve, bridge="native")
print(sum(event.is_start for _, event in compiles.buffer))
"""


def test_a_new_model_of_a_direct_layer_compiles_its_entry_alone(tmp_path):
    # Such a model's code is one entry calling the library (above): optimized again in a new process
    # after its generated code (and Numba's cache of it) is deleted, it compiles that entry and not
    # the parts only the NumPy bridge runs (they compiled at import once: 3 -> 40 compiles).
    import os
    import shutil
    import subprocess
    import sys
    from tf_blade.runtime import native
    built = os.path.dirname(os.path.dirname(native.build()))  # the native op: not rebuilt here
    os.symlink(built, tmp_path / "native")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # generated code's cache beside it
    env.update(TF_BLADE_CACHE_DIR=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="3")

    def compiles():
        out = subprocess.run([sys.executable, "-c", _COUNT_COMPILES], env=env, check=True, capture_output=True, text=True)
        return int(out.stdout.split()[-1])
    compiles()  # the kernel library and this model's code, compiled or loaded
    shutil.rmtree(tmp_path / "kernels")
    assert 0 < compiles() <= 5


def test_native_entry_of_wide_and_deep_runs_its_normalizers_in_turn():
    # wide & deep's numeric columns are log1p(max(x, 0)), fused (codegen/lowerings/log1p.py): the
    # entry runs their chains one after another (elementwise parts make no parallel group: running
    # them in parallel costs more than it saves) and hands the values to the
    # deep layer's library call in slots; the wide layer reads every input in place, and the wide
    # logit (the Sum of its rows) is the library's too. No template part of either layer.
    from tf_blade.codegen.generate import generate
    spec = _spec(criteo_wdl_model(3, 2, dim=4, hidden=(8,)))
    source, templates = generate(spec)
    entry = source[source.index("def entry("):]
    assert entry.count("run_direct(") == 2 and entry.count("run_direct(in_ptrs, in_shapes, ") == 1
    assert ".run_group(" not in entry and entry.count(".run_task(") == 2 and entry.count("value_slot(") == 2
    assert "np.arange(" not in entry and ".plan(" not in entry and ".fill_into(" not in entry and "pieces(" not in source
    assert len([name for name, src in templates.items() if "plan_by_address" in src]) == 2


def test_native_entry_reads_numeric_inputs_in_place():
    # numeric columns without a normalizer are inputs of the op: the layer's library call reads
    # them in place (their DenseFeatures Reshapes checked by its plan), and the entry runs no steps
    from tf_blade.codegen.generate import generate
    serve, _ = _numeric_layer()
    (spec,) = fused_specs(serve, bridge="native")
    source, _ = generate(spec)
    entry = source[source.index("def entry("):]
    assert entry.count("run_direct(in_ptrs, in_shapes, ") == 1 and "value_slot(" not in entry
    assert "outs = " not in entry and "carray(ptr_from_int(in_ptrs" not in entry and ".group(" not in entry


def _numeric_layer(normalizer=None, n1_dims=(None, 3)):
    """DenseFeatures over numeric n0 ([rows, 1], ``normalizer``), n1 (shape (3,), fed as
    ``n1_dims``) and three hashed string columns: (serve, its inputs' names in call order)."""
    import tf_keras
    fc = tf.feature_column
    strings = ["s0", "s1", "s2"]
    columns = [fc.numeric_column("n0", normalizer_fn=normalizer), fc.numeric_column("n1", shape=(3,))] + [
        fc.embedding_column(fc.categorical_column_with_hash_bucket(s, 50 + 10 * i), 4) for i, s in enumerate(strings)]
    layer = tf_keras.layers.DenseFeatures(columns)
    signature = {"n0": tf.TensorSpec([None, 1], tf.float32), "n1": tf.TensorSpec(list(n1_dims), tf.float32),
                 **{s: tf.TensorSpec([None, None], tf.string) for s in strings}}
    return tf.function(lambda features: layer(features), input_signature=[signature]), strings


def _numeric_features(rng, strings, rows, n1_width=3):
    batch = synthetic_batch(rows, 3, seed=int(rng.integers(1 << 30)))
    return {"n0": tf.constant(rng.standard_normal((rows, 1)).astype(np.float32)),
            "n1": tf.constant(rng.standard_normal((rows, n1_width)).astype(np.float32)),
            **{s: tf.constant(batch[c]) for s, c in zip(strings, column_names(3))}}


def test_native_entry_gives_the_library_call_the_columns_the_op_computed(rng):
    # A numeric column the op makes (n0's normalizer runs in the op): the entry runs the part that
    # makes it and hands its buffer to the library call, in a slot after the op's inputs. The
    # layer is a part of its own though one part feeds it (parts.decompose), and its plan checks
    # both numeric columns' Reshapes.
    from tf_blade.codegen.generate import generate
    serve, strings = _numeric_layer(normalizer=lambda x: x * 2.0)
    (spec,) = fused_specs(serve, bridge="native")
    source, _ = generate(spec)
    entry = source[source.index("def entry("):]
    assert entry.count("run_direct(") == 1 and entry.count("value_slot(") == 1 and "outs = " in entry
    assert "np.arange(" not in entry
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    assert not any(n["op"] == "Reshape" for n in spec["nodes"])
    stock = serve.get_concrete_function()
    optimized = tf_blade.optimize(serve, bridge="native").signatures["serving_default"]
    for rows in (0, 300):
        tensors = _numeric_features(rng, strings, rows)
        np.testing.assert_array_equal(optimized(*(tensors[k] for k in sorted(tensors))).numpy(), stock(tensors).numpy())


def test_a_numeric_inputs_reshape_is_checked_as_tf_checks_it(rng):
    # n1 fed as [rows, any width]: DenseFeatures reshapes it to [rows, 3], which the layer's plan
    # checks in place of the Reshape it absorbed. Of rows, only width 3 passes; no rows pass as
    # any width does in TF, and the layer is as wide as the reshape makes it.
    serve, strings = _numeric_layer(n1_dims=(None, None))
    stock = serve.get_concrete_function()
    optimized = tf_blade.optimize(serve, bridge="native").signatures["serving_default"]
    (spec,) = fused_specs(serve, bridge="native")
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    (layer_node,) = [n for n in spec["nodes"] if n["op"] == "_BladeStringBagLayer"]
    assert layer_node["attrs"]["n_targets"][:2] == [1, 1] and not any(n["op"] == "Reshape" for n in spec["nodes"])
    for rows, width in ((0, 2), (4, 3)):
        tensors = _numeric_features(rng, strings, rows, width)
        np.testing.assert_array_equal(optimized(*(tensors[k] for k in sorted(tensors))).numpy(), stock(tensors).numpy())
    tensors = _numeric_features(rng, strings, 4, 2)
    messages = []
    for call in (lambda: stock(tensors), lambda: optimized(*(tensors[k] for k in sorted(tensors)))):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            call()
        messages.append(re.findall(r"Input to reshape is [^\n]*", e.value.message)[:1])
    assert messages[0] == messages[1] == ["Input to reshape is a tensor with 8 values, but the requested shape has 12"]


def _compiled_at_import(source):
    """The part templates whose task a cluster module compiles when it is imported."""
    return [name for names in re.findall(r"^k_parallel\.compile_parts\(\[([\w, ]*)\]\)", source, re.M)
            for name in names.split(", ")]


def _wide_logit_model(n_columns, keep_dims, axis):
    """A linear model over hashed columns, as wide & deep's wide part: ``Sum(DenseFeatures, axis)``."""
    import tf_keras
    fc = tf.feature_column
    names = column_names(n_columns)
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(
        [fc.embedding_column(fc.categorical_column_with_hash_bucket(n, 40 + 7 * i), 1 + i % 2, combiner="sum")
         for i, n in enumerate(names)])
    module.serve = tf.function(
        lambda *s: {"logit": tf.reduce_sum(module.layer(dict(zip(names, s))), axis=axis, keepdims=keep_dims)},
        input_signature=[tf.TensorSpec([None, None], tf.string, name=n) for n in names])
    module.serve.get_concrete_function()
    return module


@pytest.mark.parametrize("keep_dims,axis,direct", [(True, 1, True), (False, -1, True), (True, [1], True),
                                                    (False, 0, False)])
def test_sum_of_a_layers_rows_is_computed_by_the_library_as_tf_does(keep_dims, axis, direct):
    # A Sum over axis 1 of a layer the op outputs: the direct cfunc fills the layer in a scratch
    # buffer and adds its rows in Eigen's order (kernels/reduce.py); any other axis keeps the
    # template. Bit for bit TF's, from empty batches to parallel ones (9000 rows).
    from tf_blade.codegen.generate import generate
    module = _wide_logit_model(3, keep_dims, axis)
    source, _ = generate(_spec(module))
    entry = source[source.index("def entry("):]
    assert ("run_direct(" in entry) == direct and (".run_task(" in entry) != direct
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    ops = op_counts(optimized)  # fused: a kernel that failed to compile would leave TF's ops
    assert ops["BladeFusedCall"] == 1 and ops["StringToHashBucketFast"] == 0, ops
    for rows in (0, 1, 7, 129, 9000):
        batch = synthetic_batch(rows, 3, empty_fraction=0.3, seed=rows)
        args = [tf.constant(batch[c]) for c in column_names(3)]
        want, got = module.serve(*args)["logit"].numpy(), optimized(*args)["logit"].numpy()
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_the_row_sums_scratch_allocator_refuses_sizes_past_its_bound(monkeypatch):
    # The row-sum cfunc's layer comes from the plain direct cfunc through this allocator: a size
    # whose bytes overflow or pass MOST_SCRATCH_BYTES gets no buffer (the cfunc then fails with an
    # OOM message), any other one a buffer of its own, recorded for the caller to free.
    import ctypes
    from tf_blade.kernels.parallel import compile_task
    monkeypatch.setattr(bag_layer, "_wanted", {})  # none left for a later load to compile
    bag_layer.want_layer("float32", direct=True)
    alloc = compile_task(*bag_layer._wanted[("scratch_alloc",)])
    for rows, width, ok in ((3, 2, True), (0, 5, True), (2 ** 40, 2, False), (2 ** 62, 2 ** 62, False), (-1, 2, False)):
        state, dims = np.array([0, 0, 0, 4], np.int64), np.array([rows, width], np.int64)
        address = alloc.ctypes(state.ctypes.data, 0, 2, dims.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
        assert bool(address) == ok and (state[0] != 0) == ok
        if ok:
            assert list(state[1:3]) == [rows, width]
            ctypes.CDLL(None).free(ctypes.c_void_p(address))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # _raising_direct's, printed
@pytest.mark.parametrize("row_sum", [False, True])
def test_a_direct_cfunc_that_raises_fails_the_op_with_tfs_oom_error(row_sum):
    # A cfunc that raises answers 0 (its wrapper prints the exception), which read as "done": the
    # op then returned a layer it never filled, or a row sum of whatever the scratch held. The
    # plain cfunc's cell points at one that raises; the row-sum cfunc calls it through that cell.
    from tf_blade.kernels.parallel import task_cell
    module = _wide_logit_model(3, True, 1) if row_sum else criteo_feature_model(3)
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    assert op_counts(optimized)["BladeFusedCall"] == 1
    batch = synthetic_batch(5, 3)
    args = [tf.constant(batch[c]) for c in column_names(3)]
    want = module.serve(*args)
    cell = task_cell(bag_layer._DIRECT_SYMBOLS["float32", False])
    address, cell.value = cell.value, _raising_direct.address
    try:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="which raised"):
            optimized(*args)
    finally:
        cell.value = address
    got = optimized(*args)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_sum_of_a_layers_rows_fails_as_tf_does():
    module = _wide_logit_model(3, True, 1)
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    batch = synthetic_batch(4, 3)
    batch["C2"] = batch["C2"][:3]
    messages, nodes = [], []
    for fn in (module.serve, optimized):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            fn(*[tf.constant(batch[c]) for c in column_names(3)])
        messages.append(re.findall(r"ConcatOp : [^\n]*", e.value.message)[:1])
        nodes.append(re.findall(r"\{\{node ([^}]*)\}\}", e.value.message))
    assert messages[0] == messages[1] and messages[0]
    assert nodes[0] and nodes[0][0].endswith("/concat") and nodes[0][0] in nodes[1]  # the layer's node, not the Sum


def test_a_layer_the_library_cannot_take_is_planned_and_filled_by_its_template(monkeypatch, rng):
    # Layers with runtime shape vectors, strings made inside the op or another dtype keep the
    # template's plan and fill_into in the entry; forced here on wide & deep's layer.
    from tf_blade.codegen.generate import generate
    from tf_blade.codegen.lowerings import string_bag_layer
    from tf_blade.examples import synthetic_numeric
    from tf_blade.runtime import compiler
    monkeypatch.setattr(string_bag_layer, "DIRECT_DTYPES", ())
    monkeypatch.setattr(compiler, "_modules", {})
    module = criteo_wdl_model(2, 3, dim=4, hidden=(8,))
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    (fused,) = [n for n in running_nodes(optimized.graph.as_graph_def()) if n.op == "BladeFusedCall"]
    source, _ = generate(json.loads(fused.attr["cluster"].s.decode()))
    entry = source[source.index("def entry("):]
    assert ".plan(" in entry and ".fill_into(" in entry and "run_direct(" not in entry
    for rows in (0, 3, 700):
        seed = int(rng.integers(1 << 30))
        batch = {k: tf.constant(v) for k, v in {**synthetic_batch(rows, 2, seed=seed),
                                                 **synthetic_numeric(rows, 3, seed=seed)}.items()}
        np.testing.assert_array_equal(optimized(**batch)["logit"].numpy(), module.serve(**batch)["logit"].numpy())


def _spec(module):
    (spec,) = fused_specs(module.serve, bridge="native")
    return spec


def _call(fn, batch):
    return fn(*[tf.constant(batch[c]) for c in column_names(N_COLUMNS)])


def test_dense_features_of_hashed_strings_is_one_layer_op():
    spec = _spec(criteo_feature_model(N_COLUMNS, dim=4))
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [n["op"] for n in spec["nodes"]]
    assert ops.count("_BladeStringBagLayer") == 1 and "_BladeStringBag" not in ops and "Reshape" not in ops
    # DenseFeatures' targets come from Shape(bag) and Shape(Reshape(bag)), each first a
    # _BladeBagShape, then read statically into the layer's shape program: no runtime vectors.
    layer = next(n for n in spec["nodes"] if n["op"] == "_BladeStringBagLayer")
    assert len(layer["inputs"]) == 2 * N_COLUMNS  # strings and tables only
    assert "_BladeBagShape" not in ops and "Shape" not in ops
    assert not [n for n in spec["nodes"] if n["op"] == "ConcatV2" and n["outputs"][0][1] == 2]  # shape vectors only


# 129 and 300 rows cross the kernel's 128-row blocks; 9000 rows (9000 * 5 * 4 strings) are
# enough for the layer to run its blocks in parallel.
@pytest.mark.parametrize("rows", [0, 1, 7, 129, 300, 9000])
def test_layer_matches_tf_bit_for_bit(layer_model, rows):
    stock, optimized = layer_model
    for seed in range(2):
        batch = synthetic_batch(rows, N_COLUMNS, empty_fraction=0.3, seed=seed)
        want, got = _call(stock, batch), _call(optimized, batch)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_columns_of_different_batch_sizes_fail_as_in_tf(layer_model):
    stock, optimized = layer_model
    batch = synthetic_batch(4, N_COLUMNS)
    batch[column_names(N_COLUMNS)[2]] = batch[column_names(N_COLUMNS)[2]][:3]
    messages, nodes = [], []
    for fn in (stock, optimized):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            _call(fn, batch)
        messages.append(re.findall(r"ConcatOp : [^\n]*", e.value.message)[:1])  # the numpy bridge repeats it
        nodes.append(re.findall(r"\t \[\[\{\{node ([^}]*/concat)\}\}\]\]", e.value.message))
    assert nodes[0] and nodes[0][0] in nodes[1]  # naming the op TF names
    assert messages[0] == messages[1] == ["ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [4,4] "
                                          "vs. shape[2] = [3,4]"]


@njit
def _plan_through_task(ids, shapes, raw, tabs, kinds, buckets, modes, n_targets, program, vectors, err):
    return bag_layer.plan_by_address(ids, shapes, raw, tabs, kinds, buckets, modes, n_targets, program, vectors, err)


@njit
def _plan_linked(ids, shapes, raw, tabs, kinds, buckets, modes, n_targets, program, vectors, err):
    """plan_rows itself, as plan_rows_by_address calls it for arguments its task does not take."""
    return bag_layer.plan_rows(bag_layer._column_arrays(ids, shapes, raw, tabs, None), kinds, buckets, modes,
                               n_targets, program, bag_layer._vector_rows(vectors), err)


def _layer(columns, tables, buckets, modes, targets_per_column, wide):
    """The kernel's layer over ``columns`` (2-d object arrays of bytes): each column's new_shape
    (its strings' own shape, from the shape program) and Reshape targets (runtime vectors)."""
    ids, shapes, raw, tabs, vectors = List(), List(), List(), List(), List()
    program = []
    for strings, table, targets in zip(columns, tables, targets_per_column):
        ids.append(np.arange(strings.size))
        shapes.append(np.array(strings.shape, np.int64))
        raw.append(tstrings_from_bytes(list(strings.ravel())))
        tabs.append(table)
        program += [2, bag_layer.STRINGS_DIM, 0, bag_layer.STRINGS_DIM, 1]
        for t in targets:
            program += [1, bag_layer.RUNTIME, len(vectors)]
            vectors.append(np.array(t, np.int64))
    vectors.append(np.zeros(0, np.int64))
    n_targets = np.array([len(t) for t in targets_per_column], np.int64)
    buckets, modes = np.array(buckets, np.int64), np.array(modes, np.int64)
    err = new_error_buffer()
    kinds = np.zeros(len(columns), np.int64)  # BAG
    bag_layer.compile_layer(tabs[0].dtype.name)
    planner = _plan_through_task if wide else _plan_linked  # through the task, and linked
    layout, rows, width, failed = planner(ids, shapes, raw, tabs, kinds, buckets, modes, n_targets,
                                          np.array(program, np.int64), vectors, err)
    if err[0]:
        return None, error_text(err), failed
    out = np.full((rows, width), np.nan, tabs[0].dtype)
    # wide: its blocks on tf_blade's own pool (outside an op; kernels/parallel.py)
    bag_layer.fill_wide(ids, raw, tabs, kinds, buckets, modes, layout, out, wide, err)
    assert err[0] == 0, error_text(err)
    return out, None, failed


def _bag(strings, table, buckets, mode):
    """One column through the per-column string bag (already tested against TF)."""
    raw = tstrings_from_bytes(list(strings.ravel()))
    err = new_error_buffer()
    out = string_bag(np.arange(strings.size).reshape(strings.shape), raw, raw[:0],
                     np.array(strings.shape, np.int64), table, buckets, mode, err)
    return out, (error_text(err) if err[0] else None)


@pytest.mark.parametrize("wide", [False, True])
def test_kernel_is_the_concat_of_its_bags(rng, wide):
    pool = np.array(POOL, object)
    for rows in (0, 1, 127, 128, 129, 400):
        widths, slots = (4, 6, 2), (3, 1, 12)  # 12 slots: runs of 8 and more, TF's blocked sums
        columns = [rng.choice(pool, size=(rows, k)) for k in slots]
        tables = [rng.standard_normal((int(rng.integers(1, 60)), w)).astype(np.float32) for w in widths]
        buckets = [t.shape[0] for t in tables]
        regroup = rows % 2 == 0 and rng.random() < 0.5  # rows in pairs: the kernel's general path
        if regroup:
            targets = [[[-1, 2 * w]] for w in widths]
        else:  # as DenseFeatures: the rows kept, through one or two Reshapes or none
            targets = [[], [[-1, 6], [rows, 6]], [[rows, 2]]]
        got, err, _ = _layer(columns, tables, buckets, [0, 1, 2], targets, wide)
        assert err is None, err
        bags = [_bag(s, t, b, m)[0] for s, t, b, m in zip(columns, tables, buckets, [0, 1, 2])]
        if regroup:
            bags = [b.reshape(rows // 2, 2 * b.shape[1]) for b in bags]
        np.testing.assert_array_equal(got, np.concatenate(bags, axis=1))


def test_kernel_reports_the_bag_reshape_and_concat_errors_of_tf():
    strings = np.array([[b"a", b"b", b"c", b"d", b"e"]], object)
    small = np.ones((1, 3), np.float32)  # buckets 1000 over a 1-row table: ids miss it
    want = _bag(strings, small, 1000, 1)[1]
    assert want is not None and "is not in [0, 1)" in want
    ok = np.ones((10, 3), np.float32)
    assert _layer([strings, strings], [ok, small], [10, 1000], [1, 1], [[], []], False)[1:] == (want, 1)
    assert _layer([strings, strings], [ok, ok], [10, 10], [1, 1], [[], [[2, 2]]], False)[1:] == \
        ("Input to reshape is a tensor with 3 values, but the requested shape has 4", 1)
    two = np.array([[b"a"], [b"b"]], object)
    assert _layer([strings, two], [ok, ok], [10, 10], [1, 1], [[], []], False)[1:] == \
        ("ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [1,3] vs. shape[1] = [2,3]", 1)


def test_numeric_columns_among_the_bags_are_copied_into_the_layer(rng):
    """Wide & deep's DNN input: numeric columns between the hashed ones. They join the layer as
    dense columns (copied into place); the layer gives TF's bits."""
    import tf_keras
    fc = tf.feature_column
    strings = ["s0", "s1", "s2"]
    columns = [fc.numeric_column("n0"), fc.numeric_column("n1", shape=(3,))] + [
        fc.embedding_column(fc.categorical_column_with_hash_bucket(s, 50 + 10 * i), 4) for i, s in enumerate(strings)]
    layer = tf_keras.layers.DenseFeatures(columns)
    signature = {"n0": tf.TensorSpec([None, 1], tf.float32), "n1": tf.TensorSpec([None, 3], tf.float32),
                 **{s: tf.TensorSpec([None, None], tf.string) for s in strings}}
    serve = tf.function(lambda features: layer(features), input_signature=[signature])
    stock = serve.get_concrete_function()
    optimized = tf_blade.optimize(serve, bridge="native").signatures["serving_default"]
    graph = optimized.graph.as_graph_def()
    (fused,) = [n for n in running_nodes(graph) if n.op == "BladeFusedCall"]
    spec = json.loads(fused.attr["cluster"].s.decode())
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    (layer_node,) = [n for n in spec["nodes"] if n["op"] == "_BladeStringBagLayer"]
    assert layer_node["attrs"]["kind"] == [bag_layer.DENSE] * 2 + [bag_layer.BAG] * 3  # DenseFeatures sorts by name
    for rows in (0, 1, 200, 3000):
        batch = synthetic_batch(rows, 3, seed=int(rng.integers(1 << 30)))
        features = {"n0": rng.standard_normal((rows, 1)).astype(np.float32),
                    "n1": rng.standard_normal((rows, 3)).astype(np.float32),
                    **{s: batch[c] for s, c in zip(strings, column_names(3))}}
        tensors = {k: tf.constant(v) for k, v in features.items()}
        want = stock(tensors)
        got = optimized(*(tensors[k] for k in sorted(tensors)))  # the flattened dict, in key order; a tensor back
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # A numeric column of another batch size fails in the layer's plan with TF's concat error.
    tensors["n1"] = tf.constant(rng.standard_normal((rows + 1, 3)).astype(np.float32))
    messages = []
    for call in (lambda: stock(tensors), lambda: optimized(*(tensors[k] for k in sorted(tensors)))):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            call()
        messages.append(re.findall(r"ConcatOp : [^\n]*", e.value.message)[:1])
    assert messages[0] == messages[1] == [f"ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = "
                                          f"[{rows},1] vs. shape[1] = [{rows + 1},3]"]


def _keras_pooled_model(buckets, table_rows, dims=None):
    """Keras's way: per column Hashing(num_bins) -> Embedding(rows, dim: 4 unless ``dims``) ->
    mean over the row's k strings (the "" padding hashes like any string), concatenated."""
    import tf_keras
    layers = tf_keras.layers
    module = tf.Module()
    module.hashing = [layers.Hashing(num_bins=b) for b in buckets]
    module.embeddings = [layers.Embedding(r, d) for r, d in zip(table_rows, dims or [4] * len(table_rows))]

    def serve(*strings):
        return {"x": tf.concat([tf.reduce_mean(e(h(s)), axis=1)
                                for h, e, s in zip(module.hashing, module.embeddings, strings)], axis=1)}
    module.serve = tf.function(serve, input_signature=[tf.TensorSpec([None, None], tf.string)] * len(buckets))
    module.serve.get_concrete_function()
    return module


def _strings(rng, rows, k):
    pool = np.array([b"", b"a", "\u00e9t\u00e9".encode(), b"x" * 100, b"id_7", b"C1_31"], object)
    return tf.constant(pool[rng.integers(0, len(pool), (rows, k))].reshape(rows, k))


def _concat_or_gather_error(fn, args):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fn(*args)
    return re.findall(r"(?:ConcatOp : |indices\[)[^\n]*", e.value.message)[:1]


def test_keras_pooled_embeddings_of_hashed_strings_are_layer_columns(rng):
    module = _keras_pooled_model((50, 70, 20), (50, 70, 20))
    (spec,) = fused_specs(module.serve, bridge="native")
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [n["op"] for n in spec["nodes"]]
    (layer,) = [n for n in spec["nodes"] if n["op"] == "_BladeStringBagLayer"]
    assert layer["attrs"]["kind"] == [bag_layer.POOLED] * 3 and layer["attrs"]["mode"] == [1] * 3
    assert "_BladePooledGather" not in ops and "StringToHashBucketFast" not in ops
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    # k = 1 copies a row, k = 0 is a mean over nothing (NaN); 3000 rows of 3 columns fill in parallel blocks
    for rows, k in ((0, 4), (1, 1), (5, 0), (129, 3), (3000, 4)):
        args = [_strings(rng, rows, k), _strings(rng, rows, max(k - 1, 0)), _strings(rng, rows, k)]
        np.testing.assert_array_equal(optimized(*args)["x"].numpy(), module.serve(*args)["x"].numpy())
    args = [_strings(rng, 4, 2), _strings(rng, 4, 2), _strings(rng, 3, 2)]
    assert _concat_or_gather_error(optimized, args) == _concat_or_gather_error(module.serve, args) == [
        "ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [4,4] vs. shape[2] = [3,4]"]


def test_long_pools_of_odd_widths_match_tf_in_every_block(rng):
    """Pools of 16 strings or more add in Eigen's 4-accumulator order only where an output lies in
    a whole packet, which for widths that are not a multiple of the packet depends on the row's
    place in the whole batch: blocks filled on other threads must know it (kernels/pooled_gather.py)."""
    module = _keras_pooled_model((50, 70, 20), (50, 70, 20), dims=(1, 5, 16))
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    for rows, k in ((1, 16), (3, 20), (700, 17)):
        args = [_strings(rng, rows, k), _strings(rng, rows, 2 * k), _strings(rng, rows, k)]
        np.testing.assert_array_equal(optimized(*args)["x"].numpy(), module.serve(*args)["x"].numpy())


def test_a_pooled_column_whose_buckets_miss_its_table_fails_as_in_tf(rng):
    module = _keras_pooled_model((50, 70), (50, 30))  # column 1 hashes into 70 buckets, has 30 rows
    optimized = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    candidates = [f"s{i}".encode() for i in range(20)]
    buckets = tf.strings.to_hash_bucket_fast(candidates, 70).numpy()
    hit, miss = (next(c for c, b in zip(candidates, buckets) if test(b)) for test in (lambda b: b < 30, lambda b: b >= 30))
    args = [_strings(rng, 3, 3), tf.constant(np.array([[hit, hit], [hit, miss], [miss, hit]], object))]
    want = _concat_or_gather_error(module.serve, args)
    assert want and want[0].startswith("indices[") and _concat_or_gather_error(optimized, args) == want


@pytest.mark.parametrize("wide", [False, True])
def test_a_block_whose_scratch_cannot_be_allocated_fails_the_fill(wide):
    # A layout whose rows hold 2**50 strings each: no block can allocate its ids, serial or in tasks.
    ids, raw, tabs = List([np.arange(1)]), List([tstrings_from_bytes([b"a"])]), List([np.ones((4, 2), np.float32)])
    zero, layout = np.zeros(1, np.int64), np.array([[300, 2**50, 2, 2, 0]], np.int64)
    out, err = np.zeros((300, 2), np.float32), new_error_buffer()
    bag_layer.compile_layer("float32")
    bag_layer.fill_wide(ids, raw, tabs, zero, np.ones(1, np.int64), zero, layout, out, wide, err)
    assert error_text(err) == "OOM when allocating the feature layer's scratch buffers"


@pytest.mark.parametrize("wide", [False, True])
def test_fill_without_its_compiled_task_fails_instead_of_leaving_output_unwritten(wide):
    # The blocks run through the dtype's task (its code is linked into no caller): with the task's
    # address cleared, as in a process that never ran compile_blocks, the fill must say so.
    from tf_blade.kernels.parallel import task_cell
    ids, raw, tabs = List([np.arange(2)]), List([tstrings_from_bytes([b"a", b"b"])]), List([np.ones((4, 2), np.float32)])
    zero, layout = np.zeros(1, np.int64), np.array([[2, 1, 2, 2, 0]], np.int64)
    out, err = np.full((2, 2), np.nan, np.float32), new_error_buffer()
    bag_layer.compile_layer("float32")
    cell = task_cell(bag_layer._SYMBOLS["float32"])
    address, cell.value = cell.value, 0
    empty, empty_err = np.zeros((0, 2), np.float32), new_error_buffer()
    try:
        bag_layer.fill_wide(ids, raw, tabs, zero, np.full(1, 4, np.int64), zero, layout, out, wide, err)
        bag_layer.fill_wide(ids, raw, tabs, zero, np.full(1, 4, np.int64), zero, layout, empty, wide, empty_err)
    finally:
        cell.value = address
    assert error_text(err) == "tf_blade: the feature layer's kernel is not compiled"
    assert empty_err[0] == 0  # no blocks to run: nothing is missing
    err = new_error_buffer()
    bag_layer.fill_wide(ids, raw, tabs, zero, np.full(1, 4, np.int64), zero, layout, out, wide, err)
    assert err[0] == 0 and not np.isnan(out).any()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # _raising_task's, printed
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("width, symbols", [(2, "_POOL_SYMBOLS"), (1, "_POOL_ONE_SYMBOLS")])
def test_pooled_fill_without_its_task_fails_instead_of_leaving_output_unwritten(wide, width, symbols):
    # POOLED columns pool through a task of their own, compiled only for layers that have one, and
    # a table of one column (kernels/reduce.py's order) through another, compiled only for layers
    # whose tables may have one column: without its task the fill fails, saying so, and so it
    # does, with TF's OOM message, when the task raised (an allocation beyond memory).
    from tf_blade.kernels.parallel import task_cell
    ids, raw = List([np.arange(4)]), List([tstrings_from_bytes([b"a", b"b", b"", b"c"])])
    tabs = List([np.arange(4 * width, dtype=np.float32).reshape(4, width)])
    kinds, zero = np.full(1, bag_layer.POOLED, np.int64), np.zeros(1, np.int64)
    layout = np.array([[2, 2, width, width, 0]], np.int64)  # 2 rows of 2 strings
    out, err = np.full((2, width), np.nan, np.float32), new_error_buffer()
    bag_layer.compile_layer("float32", pooled=True)
    cell = task_cell(getattr(bag_layer, symbols)["float32"])
    for stand_in, expected in ((0, bag_layer.NOT_COMPILED), (_raising_task.address, bag_layer.RAISED)):
        address, cell.value, err = cell.value, stand_in, new_error_buffer()
        try:
            bag_layer.fill_wide(ids, raw, tabs, kinds, np.full(1, 4, np.int64), zero, layout, out, wide, err)
        finally:
            cell.value = address
        assert error_text(err) == expected
    err = new_error_buffer()
    bag_layer.fill_wide(ids, raw, tabs, kinds, np.full(1, 4, np.int64), zero, layout, out, wide, err)
    assert err[0] == 0 and not np.isnan(out).any(), error_text(err)


def test_only_layers_with_pooled_columns_compile_the_pool_task(monkeypatch):
    compiled = []

    @contextlib.contextmanager
    def listed(jobs):
        yield {key: compiled.append(symbol) for key, (sig, fn, symbol) in jobs.items()}

    monkeypatch.setattr(bag_layer, "_compiled", {})
    monkeypatch.setattr(bag_layer, "_wanted", {})
    monkeypatch.setattr(bag_layer, "compiling_tasks", listed)
    bag_layer.compile_layer("float32")
    assert bag_layer._SYMBOLS["float32"] in compiled and bag_layer._PLAN_SYMBOL in compiled
    assert bag_layer._POOL_SYMBOLS["float32"] not in compiled and bag_layer._MISS_SYMBOL not in compiled
    bag_layer.compile_layer("float32", pooled=True)
    assert compiled.count(bag_layer._POOL_SYMBOLS["float32"]) == 1 and compiled.count(bag_layer._MISS_SYMBOL) == 1


@pytest.mark.parametrize("build, pooled", [(lambda: criteo_feature_model(3, dim=4), False),
                                           (lambda: keras_prep_model(3, dim=4, hidden=(4,)), True)])
def test_the_lowering_asks_for_the_pool_task_when_the_layer_pools(build, pooled, monkeypatch):
    from tf_blade.codegen.lowerings import string_bag_layer
    asked = []
    original = string_bag_layer.want_layer
    monkeypatch.setattr(string_bag_layer, "want_layer",
                        lambda dtype, p=False, direct=None, **misses: asked.append(p) or original(dtype, p, direct, **misses))
    tf_blade.optimize(build().serve, bridge="native")
    assert asked and set(asked) == {pooled}


def test_a_cluster_compiles_its_layer_tasks_together(monkeypatch):
    # plan and blocks (asked for by the NumPy body's lowering) and the direct cfunc (by the native
    # entry's) reach compiling_tasks in one call, so that a cold start can split them over two
    # cores, and the entry compiles inside it (while a child would compile the tasks); no bag miss
    # check: every table has a row for each bucket
    from tf_blade.runtime import cfunc_cache
    calls = []
    original, original_cfunc = bag_layer.compiling_tasks, cfunc_cache.cached_cfunc

    @contextlib.contextmanager
    def recorded(jobs):
        calls.append(list(jobs))
        with original(jobs) as compiled:
            yield compiled
        calls.append("tasks compiled")

    def entry_recorded(signature, **options):
        calls.append("entry")
        return original_cfunc(signature, **options)

    monkeypatch.setattr(bag_layer, "_compiled", {})
    monkeypatch.setattr(bag_layer, "_wanted", {})  # none left by the tests that only generate code
    monkeypatch.setattr(bag_layer, "compiling_tasks", recorded)
    monkeypatch.setattr(cfunc_cache, "cached_cfunc", entry_recorded)
    monkeypatch.setattr(compiler, "_modules", {})  # generated again, even if an earlier test loaded it
    tf_blade.optimize(criteo_feature_model(2, dim=4).serve, bridge="native")
    assert calls == [[("direct", "float32", False), ("plan",), ("blocks", "float32")], "entry",
                     "tasks compiled"]  # _JOB_ORDER
    # wide & deep's: the child takes the plain direct cfunc first, then the row sum's (which calls
    # it), this process blocks first, then the scratch allocator and the bag miss check
    keys = [("plan",), ("scratch_alloc",), ("bag_miss",), ("blocks", "float32"), ("direct", "float32", True),
            ("direct", "float32", False)]
    assert sorted(keys, key=bag_layer._job_rank) == [("direct", "float32", False), ("direct", "float32", True),
                                                     ("plan",), ("bag_miss",), ("scratch_alloc",), ("blocks", "float32")]


def _layer_after_rewrites(spec):
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(json.loads(json.dumps(spec)))
    (layer,) = [n for n in spec["nodes"] if n["op"] == "_BladeStringBagLayer"]
    return layer


@pytest.mark.parametrize("build", [lambda: criteo_feature_model(2, dim=4), lambda: keras_prep_model(2, dim=4, hidden=(4,))])
def test_a_layer_knows_its_tables_static_shapes(build):
    # The layer's tasks are chosen by its tables' static shapes (captured variables'): a miss check
    # (a task of its own per column kind) only for a table with fewer rows than buckets, or rows
    # that are not static; the pooling of one-column tables only where a POOLED column may have one.
    (spec,) = fused_specs(build().serve, bridge="native")
    tables = [inp for inp in spec["inputs"] if inp["read_variable"]]
    assert sorted(inp["shape"][0] for inp in tables) == sorted(CRITEO_BUCKETS[:2]) and all(inp["shape"][1] == 4 for inp in tables)
    assert _layer_after_rewrites(spec)["attrs"]["table_shape"] == [[b, 4] for b in CRITEO_BUCKETS[:2]]
    changed = next(inp for inp in tables if inp["shape"][0] == CRITEO_BUCKETS[0])  # column C1's table
    for shape, seen in (([3, 1], [3, 1]), ([None, 4], [-1, 4]), (None, [-1, -1])):
        if shape is None:
            del changed["shape"]
        else:
            changed["shape"] = shape
        assert _layer_after_rewrites(spec)["attrs"]["table_shape"] == [seen, [CRITEO_BUCKETS[1], 4]]


@pytest.mark.parametrize("kind", [bag_layer.BAG, bag_layer.POOLED])
@pytest.mark.parametrize("table_shape", [[4, 16], [3, 16], [4, 1], [-1, -1], None])
def test_the_lowering_asks_for_the_tasks_its_tables_need(kind, table_shape, monkeypatch):
    from tf_blade.codegen.emitter import Emitter
    from tf_blade.codegen.generate import SpecNode
    from tf_blade.codegen.lowerings.string_bag_layer import StringBagLayerLowering
    monkeypatch.setattr(bag_layer, "_wanted", {})
    attrs = {"kind": [kind, bag_layer.DENSE], "num_buckets": [4, 0], "mode": [1, 0], "n_targets": [0, 0], "program": []}
    if table_shape is not None:  # else a spec from before the attr: shapes unknown
        attrs["table_shape"] = [table_shape, [-1, -1]]
    node = SpecNode({"name": "layer", "op": "_BladeStringBagLayer", "attrs": attrs, "outputs": [[1, 2]]})
    StringBagLayerLowering().emit_fill(node, ["x"] * 8, "out", Emitter())
    rows, width = table_shape or (-1, -1)
    may_miss, may_be_one_column = rows < 4, width in (-1, 1)
    miss = ("bag_miss",) if kind == bag_layer.BAG else ("pooled_miss",)
    assert {key for key in bag_layer._wanted if key[0] in ("bag_miss", "pooled_miss")} == ({miss} if may_miss else set())
    assert (("pool_one", "float32") in bag_layer._wanted) == (kind == bag_layer.POOLED and may_be_one_column)


@pytest.mark.parametrize("kind, symbol, message", [
    (bag_layer.POOLED, bag_layer._MISS_SYMBOL, r"indices\[0,\d\] = \d+ is not in \[0, 4\)"),  # ResourceGather's
    (bag_layer.BAG, bag_layer._BAG_MISS_SYMBOL, r"indices\[\d\] = \d+ is not in \[0, 4\)")])  # the bag's gather's
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # _raising_task's, printed
def test_plan_checks_buckets_that_miss_the_table_through_the_miss_tasks(kind, symbol, message):
    # Buckets past the table: the plan names the first miss as TF would, through the column kind's
    # miss task; with that task's address cleared it says the kernel is not compiled.
    from tf_blade.kernels.parallel import task_cell
    ids, raw, tabs = List([np.arange(2)]), List([tstrings_from_bytes([b"a", b"b"])]), List([np.ones((4, 2), np.float32)])
    shapes, vectors = List([np.array([1, 2], np.int64)]), List([np.zeros(0, np.int64)])
    zero, kinds = np.zeros(1, np.int64), np.full(1, kind, np.int64)
    program = np.array([2, bag_layer.STRINGS_DIM, 0, bag_layer.STRINGS_DIM, 1], np.int64)  # a bag's new_shape: its own
    args = (ids, shapes, raw, tabs, kinds, np.full(1, 1000, np.int64), zero, zero, program, vectors)
    bag_layer.compile_layer("float32", pooled=True)
    err = new_error_buffer()
    _plan_through_task(*args, err)
    assert re.fullmatch(message, error_text(err)), error_text(err)
    cell = task_cell(symbol)
    for stand_in, expected in ((0, bag_layer.NOT_COMPILED), (_raising_task.address, bag_layer.RAISED)):
        address, cell.value = cell.value, stand_in
        err = new_error_buffer()
        try:
            _plan_through_task(*args, err)
        finally:
            cell.value = address
        assert error_text(err) == expected


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # _raising_task's, printed
def test_plan_without_its_compiled_task_fails_cleanly():
    from tf_blade.kernels.parallel import task_cell
    ids, raw, tabs = List([np.arange(2)]), List([tstrings_from_bytes([b"a", b"b"])]), List([np.ones((4, 2), np.float32)])
    shapes, vectors, err = List([np.array([2, 1], np.int64)]), List([np.zeros(0, np.int64)]), new_error_buffer()
    zero = np.zeros(1, np.int64)
    program = np.array([2, bag_layer.STRINGS_DIM, 0, bag_layer.STRINGS_DIM, 1], np.int64)
    bag_layer.compile_layer("float32")
    args = (ids, shapes, raw, tabs, zero, np.full(1, 4, np.int64), zero, zero, program, vectors)
    layout, rows, width, failed = _plan_through_task(*args, err)
    assert err[0] == 0 and (rows, width, failed) == (2, 2, -1), error_text(err)
    cell = task_cell(bag_layer._PLAN_SYMBOL)
    for stand_in, expected in ((0, bag_layer.NOT_COMPILED), (_raising_task.address, bag_layer.RAISED)):
        address, cell.value, err = cell.value, stand_in, new_error_buffer()
        try:
            layout, rows, width, failed = _plan_through_task(*args, err)
        finally:
            cell.value = address
        assert error_text(err) == expected and layout.size == 0


@cfunc(bag_layer.DIRECT_SIG)
def _raising_direct(in_ptrs, in_shapes, spec, ctx, alloc, errbuf):
    """A direct cfunc whose allocation fails: its wrapper prints the MemoryError and answers 0."""
    raise MemoryError("allocation failed")


@cfunc(types.void(types.voidptr, types.voidptr))
def _raising_task(arg, result):
    """A task whose allocation fails: its cfunc wrapper prints the MemoryError and returns, having
    written neither result nor error (a zeroed plan reads as a layer of 0 rows; a miss check, as no miss)."""
    raise MemoryError("allocation failed")

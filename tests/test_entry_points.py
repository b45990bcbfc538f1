"""Every way in: SavedModel dir or loaded, tf.Module, tf.function, ConcreteFunction, GraphDef, @function;
and every way out: the written SavedModel in a fresh process, through TF2 and through a Session."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from tf_blade.examples import column_names, criteo_feature_model, synthetic_batch

COLUMNS = 3


@pytest.fixture(scope="module")
def module():
    return criteo_feature_model(COLUMNS, dim=4)


@pytest.fixture(scope="module")
def batch():
    raw = synthetic_batch(33, COLUMNS, seed=int(np.random.default_rng().integers(1 << 30)))
    return {name: tf.constant(raw[name]) for name in column_names(COLUMNS)}


@pytest.fixture(scope="module")
def expected(module, batch):
    return module.serve(*batch.values())["features"].numpy()


@pytest.fixture(scope="module")
def saved_model(module, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("original"))
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    tf.saved_model.save(tf.Module(), path + "_bare")  # no signatures
    return path


def features(out):
    return out["features"].numpy()


def test_saved_model_dir(saved_model, batch, expected, tmp_path):
    opt = tf_blade.optimize(saved_model, str(tmp_path / "opt"))
    assert opt.report.fused_ops == 1
    assert not opt.report.save_notes  # `serve`, the function behind serving_default, is kept by it
    np.testing.assert_array_equal(features(opt.signatures["serving_default"](**batch)), expected)


def test_loaded_saved_model(saved_model, batch, expected):
    opt = tf_blade.optimize(tf.saved_model.load(saved_model))
    assert list(opt.signatures) == ["serving_default"] and opt.report.fused_ops == 1  # signatures only
    np.testing.assert_array_equal(features(opt.signatures["serving_default"](**batch)), expected)
    with pytest.raises(ValueError, match="no signatures"):
        tf_blade.optimize(tf.saved_model.load(saved_model + "_bare"))


def test_a_signature_takes_keywords_only_as_stock_tf_does(saved_model, batch):
    """A SavedModel signature refuses positional inputs; the optimized one did not and bound them in
    sorted-name order, so a call in the Python parameters' order swapped same-dtype columns."""
    stock = tf.saved_model.load(saved_model).signatures["serving_default"]
    fused = tf_blade.optimize(saved_model).signatures["serving_default"]
    for fn in (stock, fused):
        with pytest.raises(TypeError, match="positional"):
            fn(*batch.values())
    assert fused.structured_input_signature == stock.structured_input_signature


def test_outputs_keep_their_static_shapes(saved_model, tmp_path):
    """The fused op's shape function knows only ranks; the function's outputs keep the shapes TF
    inferred (a Keras layer after it needs the feature width), in process and in the SavedModel."""
    stock = tf.saved_model.load(saved_model).signatures["serving_default"]
    want = stock.structured_outputs["features"].shape
    assert want.as_list() == [None, COLUMNS * 4]
    fused = tf_blade.optimize(saved_model, str(tmp_path / "opt")).signatures["serving_default"]
    loaded = tf_blade.load(str(tmp_path / "opt")).signatures["serving_default"]
    assert fused.structured_outputs["features"].shape == want
    assert loaded.structured_outputs["features"].shape == want


def test_the_saved_model_keeps_every_table_its_functions_read(tmp_path):
    """A mutable table beside a fused lookup, and the tables of a SavedModel tf_blade wrote itself
    (optimized again), were left out of the written SavedModel and TF refused to save it; a bare
    ConcreteFunction's table has no owner to save: that is a clear error."""
    m = tf.Module()
    m.words = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [0, 1, 2], tf.string, tf.int64), 3)
    m.seen = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, default_value=-1)
    m.seen.insert(tf.constant(["b"]), tf.constant([7], tf.int64))
    m.emb = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]))

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.string, name="w")])
    def serve(w):
        return {"e": tf.reduce_mean(tf.gather(m.emb, m.words.lookup(w)), axis=1), "seen": m.seen.lookup(w)}
    m.serve = serve
    tf.saved_model.save(m, str(tmp_path / "original"), signatures={"serving_default": serve})
    x = {"w": tf.constant([["a", "zz"], ["c", "b"]])}
    want = serve(**x)
    first = tf_blade.optimize(str(tmp_path / "original"), str(tmp_path / "once"), min_cluster_size=1)
    assert first.report.fused_ops >= 1
    tf_blade.optimize(str(tmp_path / "once"), str(tmp_path / "twice"), min_cluster_size=1)
    for path in ("once", "twice"):
        got = tf_blade.load(str(tmp_path / path)).signatures["serving_default"](**x)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    with pytest.raises(ValueError, match="ConcreteFunction"):
        tf_blade.optimize(serve.get_concrete_function(), str(tmp_path / "bare"), min_cluster_size=1)


def test_the_report_names_a_function_outside_the_signatures(tmp_path):
    m = tf.Module()
    m.serve = tf.function(lambda x: {"y": x + 1}, input_signature=[tf.TensorSpec([None], tf.int64)])
    m.extra = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([None], tf.int64)])
    tf.saved_model.save(m, str(tmp_path / "original"), signatures={"serving_default": m.serve})
    opt = tf_blade.optimize(str(tmp_path / "original"), str(tmp_path / "opt"))
    assert list(opt.report.save_notes) == ["extra"]
    assert "extra: this tf.function attribute is not written" in str(opt.report)


def test_the_report_says_where_a_function_with_composite_inputs_went(tmp_path):
    f = tf.function(lambda sp: {"s": tf.sparse.reduce_sum(sp, axis=1)},
                    input_signature=[tf.SparseTensorSpec([None, 3], tf.float32)])
    opt = tf_blade.optimize(f, str(tmp_path / "opt"))  # nothing fuses: it keeps its SparseTensor input
    assert "written as blade_functions['serving_default'], not as a signature" in str(opt.report)
    assert not tf.saved_model.load(str(tmp_path / "opt")).signatures


def test_tf_module(module, batch, expected, tmp_path):
    opt = tf_blade.optimize(module, str(tmp_path / "opt"))
    np.testing.assert_array_equal(features(opt.signatures["serve"](**batch)), expected)
    # as tf.saved_model.save(module) would, its one tf.function also serves as serving_default
    loaded = tf_blade.load(str(tmp_path / "opt"))
    assert sorted(loaded.signatures) == ["serve", "serving_default"]
    np.testing.assert_array_equal(features(loaded.signatures["serving_default"](**batch)), expected)


def test_a_written_signature_keys_its_inputs_as_stock_tf_does(tmp_path):
    """tf.saved_model.save keys a signature's inputs by the input_signature's spec names; the
    optimized SavedModel keyed them by the Python parameters, so a serving request built for the
    stock export named inputs the optimized one did not have."""
    class Model(tf.Module):
        def __init__(self):
            self.table = tf.Variable(tf.random.normal([50, 4]))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="user_id"),
                                      tf.TensorSpec([None], tf.string, name="item-id")])
        def serve(self, uid, item):
            ids = tf.strings.to_hash_bucket_fast(uid, 50) * 7 + tf.strings.to_hash_bucket_fast(item, 50)
            return {"out": tf.gather(self.table, ids % 50)}

    model = Model()
    tf.saved_model.save(model, str(tmp_path / "stock"))
    opt = tf_blade.optimize(model, str(tmp_path / "opt"))
    assert opt.report.fused_ops == 1
    stock = tf.saved_model.load(str(tmp_path / "stock")).signatures["serving_default"]
    fused = tf_blade.load(str(tmp_path / "opt")).signatures["serving_default"]
    assert fused.structured_input_signature == stock.structured_input_signature
    request = {"user_id": tf.constant(["a", "b", "c"]), "item_id": tf.constant(["x", "", "z"])}
    np.testing.assert_array_equal(fused(**request)["out"], stock(**request)["out"])
    # in process, the optimized function still takes the Python parameter names, as the tf.function does
    np.testing.assert_array_equal(opt.signatures["serve"](uid=request["user_id"], item=request["item_id"])["out"],
                                  model.serve(uid=request["user_id"], item=request["item_id"])["out"])


def test_tf_function_and_concrete_function(module, batch, expected):
    for model in (module.serve, module.serve.get_concrete_function()):
        opt = tf_blade.optimize(model)
        np.testing.assert_array_equal(features(opt.signatures["serving_default"](*batch.values())), expected)


def test_graph_def_with_names(module, batch, expected):
    cf = module.serve.get_concrete_function()
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    graph_def = convert_variables_to_constants_v2(cf).graph.as_graph_def()
    inputs = [f"{name}:0" for name in column_names(COLUMNS)]
    outputs = [cf.outputs[0].name]
    opt = tf_blade.optimize(graph_def, inputs=inputs, outputs=outputs)
    assert opt.report.fused_ops == 1
    got = opt.signatures["serving_default"](*batch.values())
    np.testing.assert_array_equal(np.asarray(tf.nest.flatten(got)[0]), expected)


def test_blade_function_decorator(module, batch, expected):
    layer = module.layer
    calls = []

    @tf_blade.function(input_signature=[tf.TensorSpec([None, None], tf.string, name=n)
                                        for n in column_names(COLUMNS)])
    def serve(*cols):
        calls.append(1)
        return layer(dict(zip(column_names(COLUMNS), cols)))

    for _ in range(3):
        np.testing.assert_array_equal(serve(*batch.values()).numpy(), expected)
    assert len(serve.optimized) == 1 and len(calls) == 1  # traced and optimized once


def test_training_through_the_decorator(module, batch):
    """Fused ops have no gradient. A @tf_blade.function runs its original graph while a tape
    records, so its embedding gradients are TF's."""
    layer = module.layer

    @tf_blade.function(input_signature=[tf.TensorSpec([None, None], tf.string, name=n)
                                        for n in column_names(COLUMNS)])
    def serve(*cols):
        return layer(dict(zip(column_names(COLUMNS), cols)))

    def gradients(fn):
        with tf.GradientTape() as tape:
            out = fn(*batch.values())
            loss = tf.reduce_sum(tf.square(out["features"] if isinstance(out, dict) else out))
        return [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, layer.trainable_variables)]
    serve(*batch.values())  # optimized first: the tape must still get the original graph
    want = gradients(module.serve)
    assert want and any(np.any(w != 0) for w in want)
    for w, g in zip(want, gradients(serve)):
        np.testing.assert_array_equal(w, g)
    # An optimized function reads its tables by handle, which no tape sees: they get no gradient
    # (README), and a call under a tape still answers.
    fused = tf_blade.optimize(module.serve).signatures["serving_default"]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(fused(*batch.values())["features"])
    assert tape.gradient(loss, layer.trainable_variables) == [None] * len(layer.trainable_variables)


def test_a_gradient_into_a_fused_op_says_why_there_is_none():
    f = tf.function(lambda x: {"y": tf.cast(tf.raw_ops.Bucketize(input=x, boundaries=[0.0]), tf.float32) + x * 2.0},
                    input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    fn = tf_blade.optimize(f, min_cluster_size=1).signatures["serving_default"]
    x = tf.constant([[-1.0, 2.0]])
    with pytest.raises(LookupError, match="no gradient for the fused op .* for inference"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)["y"]
        tape.gradient(y, x)


def test_fresh_process_loads_written_saved_model(saved_model, batch, expected, tmp_path):
    out = str(tmp_path / "opt")
    tf_blade.optimize(saved_model, out)
    np.savez(tmp_path / "io.npz", expected=expected, **{k: v.numpy() for k, v in batch.items()})
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf
        import tf_blade
        io = np.load({str(tmp_path / 'io.npz')!r}, allow_pickle=True)
        names = {column_names(COLUMNS)!r}
        # TF2 loading
        sig = tf.saved_model.load({out!r}).signatures["serving_default"]
        got = sig(**{{n: tf.constant(io[n]) for n in names}})["features"].numpy()
        np.testing.assert_array_equal(got, io["expected"])
        ops = {{n.op for f in sig.graph.as_graph_def().library.function for n in f.node_def}}
        assert "BladeFusedCall" in ops, ops
        # The session path a model server uses
        with tf.compat.v1.Session(graph=tf.Graph()) as sess:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], {out!r})
            s = meta.signature_def["serving_default"]
            feed = {{s.inputs[n].name: io[n] for n in names}}
            got = sess.run(s.outputs["features"].name, feed)
        np.testing.assert_array_equal(got, io["expected"])
        from tf_blade.runtime.bridge import native_bridge
        assert native_bridge().fallback_count() == 0  # the kernel's answers, not TF's ops after a first-run mismatch
        print("FRESH-PROCESS-OK")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ), timeout=600)
    assert "FRESH-PROCESS-OK" in result.stdout, result.stderr[-3000:]


def test_optimize_restores_the_cyclic_gc(monkeypatch):
    """optimize() pauses the cyclic GC while its passes run; the caller's setting comes back,
    also when optimize() fails."""
    import gc
    fn = tf.function(lambda x: tf.strings.to_hash_bucket_fast(x, 10), input_signature=[tf.TensorSpec([None], tf.string)])
    assert gc.isenabled()
    tf_blade.optimize(fn, bridge="numpy")
    assert gc.isenabled()
    gc.disable()
    try:
        tf_blade.optimize(fn, bridge="numpy")
        assert not gc.isenabled()
    finally:
        gc.enable()
    def broken(*args, **kwargs):
        assert not gc.isenabled()  # inside the paused region
        raise RuntimeError("pass failed")
    monkeypatch.setattr("tf_blade.api._optimize_function", broken)
    with pytest.raises(RuntimeError, match="pass failed"):
        tf_blade.optimize(fn, bridge="numpy")
    assert gc.isenabled()


def test_function_with_a_python_default_argument():
    # the closure idiom `lambda x, layer=layer: ...`: the default is in the traced signature as a
    # non-tensor with no name, which failed optimize() with an AttributeError
    import tf_keras
    module = tf.Module()
    module.hashing = tf_keras.layers.Hashing(num_bins=9)
    module.f = tf.function(lambda x, h=module.hashing: {"y": h(x) * 2 + 1},
                           input_signature=[tf.TensorSpec([None, 1], tf.string)])
    opt = tf_blade.optimize(module, bridge="native")
    assert opt.report.fused_ops == 1, opt.report
    x = tf.constant([[b"a"], [b""], [b"\xff"]])
    np.testing.assert_array_equal(opt.signatures["f"](x)["y"], module.f(x)["y"])


def test_blade_function_binds_keywords_as_tf_function():
    # keywords were flattened in name order, not the parameters' order: f(b=.., a=..) swapped them
    def f(b, a, scale=tf.constant(10000, tf.int64)):
        return {"y": tf.strings.to_hash_bucket_fast(b, 1000) * scale + tf.strings.to_hash_bucket_fast(a, 1000)}

    ours, theirs = tf_blade.function(f), tf.function(f)
    b, a = tf.constant([["x", "yy"]]), tf.constant([["zzz", ""]])
    calls = [((b, a), {}), ((), {"b": b, "a": a}), ((), {"a": a, "b": b}), ((b,), {"a": a}),
             ((b, a), {"scale": tf.constant(7, tf.int64)}), ((b, a), {})]
    for args, kwargs in calls:
        np.testing.assert_array_equal(ours(*args, **kwargs)["y"].numpy(), theirs(*args, **kwargs)["y"].numpy())
    assert any(v[2].report.fused_ops for v in ours.optimized.values())


def test_blade_function_takes_ragged_arguments_by_keyword():
    def f(r, s):  # the same hashing as the test above: no kernels of its own to compile
        return {"ids": tf.strings.to_hash_bucket_fast(r.flat_values, 1000) * tf.constant(10000, tf.int64)
                + tf.cast(r.row_lengths(), tf.int64)[0], "s": tf.strings.to_hash_bucket_fast(s, 1000)}

    ours, theirs = tf_blade.function(f), tf.function(f)
    r, s = tf.ragged.constant([["a", "", "bb"], [], ["c"]]), tf.constant([["q", "w"]])
    for args, kwargs in [((r, s), {}), ((), {"s": s, "r": r}), ((r,), {"s": s})]:
        got, want = ours(*args, **kwargs), theirs(*args, **kwargs)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    assert any(v[2].report.fused_ops for v in ours.optimized.values())


def test_the_optimized_model_takes_composite_arguments_as_the_original_does():
    """optimize()'s model called as the original function: a SparseTensor or RaggedTensor goes in
    whole, positionally or by keyword (its signature takes the components)."""
    specs = [tf.RaggedTensorSpec([None, None], tf.string), tf.SparseTensorSpec([None, None], tf.string),
             tf.TensorSpec([None], tf.int64)]

    @tf.function(input_signature=specs)
    def f(r, sp, n):
        return {"ids": tf.strings.to_hash_bucket_fast(r.flat_values, 1000) * tf.constant(10000, tf.int64)
                + tf.cast(r.row_lengths(), tf.int64)[0] + n[0],
                "s": tf.strings.to_hash_bucket_fast(sp.values, 1000)}

    opt = tf_blade.optimize(f, bridge="native")
    r = tf.ragged.constant([["a", "", "bb"], [], ["c"]])
    sp = tf.sparse.from_dense(tf.constant([["q", ""], ["", "w"]]))
    n = tf.constant([3], tf.int64)
    want = f(r, sp, n)
    for got in (opt(r, sp, n), opt(r=r, sp=sp, n=n), opt(r, sp=sp, n=n)):
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())

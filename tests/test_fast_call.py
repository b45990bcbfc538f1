"""The shortcut past TF's Python argument binding (tf_blade/fast_call.py): taken for eager tensors
of the signature's dtypes and shapes, by position or keyword; every other call gets TF's own
conversions and errors."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction

import tf_blade
from tf_blade.examples import column_names, criteo_feature_model, criteo_wdl_model, synthetic_batch, synthetic_numeric
from tf_blade.fast_call import FastCall

COLUMNS = 3


@pytest.fixture(scope="module")
def model():
    module = criteo_feature_model(COLUMNS, dim=4)
    return module, tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]


@pytest.fixture(scope="module")
def batch():
    raw = synthetic_batch(17, COLUMNS, seed=int(np.random.default_rng().integers(1 << 30)))
    return {name: tf.constant(raw[name]) for name in column_names(COLUMNS)}


@pytest.fixture
def binding_refused(monkeypatch):
    """TF's argument binding raises: a call that still works took the shortcut."""
    def refuse(self, args, kwargs):
        raise AssertionError("TF's binding ran")
    monkeypatch.setattr(ConcreteFunction, "_call_impl", refuse)


def tf_call(fn, *args, **kwargs):
    return ConcreteFunction.__call__(fn, *args, **kwargs)


def test_signature_is_a_concrete_function_with_the_shortcut(model):
    _, fn = model
    assert isinstance(fn, ConcreteFunction) and isinstance(fn, FastCall)


def test_tensors_by_position_and_keyword_take_the_shortcut(model, batch, binding_refused):
    module, fn = model
    expected = module.serve(*batch.values())["features"].numpy()
    np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    np.testing.assert_array_equal(fn(**batch)["features"].numpy(), expected)
    names = list(batch)
    mixed = fn(batch[names[0]], **{n: batch[n] for n in reversed(names[1:])})
    np.testing.assert_array_equal(mixed["features"].numpy(), expected)


def call_of(batch, case):
    """(args, kwargs) of the call named ``case``: the batch by position, altered as the name says."""
    args, kwargs = list(batch.values()), {}
    if case == "numpy":
        args[1] = args[1].numpy()
    elif case == "wrong_dtype":
        args[1] = tf.zeros([17, 4], tf.int64)
    elif case == "wrong_rank":
        args[1] = tf.reshape(args[1], [-1])
    elif case == "missing":
        args = args[:-1]
    elif case == "unknown_keyword":
        kwargs = {"nope": args.pop()}
    elif case == "extra":
        args.append(args[0])
    return args, kwargs


@pytest.mark.parametrize("case", ["numpy", "wrong_dtype", "wrong_rank", "missing", "unknown_keyword", "extra"])
def test_other_calls_take_tfs_path(model, batch, binding_refused, case):
    _, fn = model
    args, kwargs = call_of(batch, case)
    with pytest.raises(AssertionError, match="TF's binding ran"):
        fn(*args, **kwargs)


# TF's call binds an input of another rank (its flat signature checks no rank) and runs the
# graph: the op, compiled for the signature's ranks, hands it to the original ops, whose error
# both calls get
@pytest.mark.parametrize("case", ["wrong_dtype", pytest.param("wrong_rank", marks=pytest.mark.fallback_expected),
                                  "missing", "unknown_keyword"])
def test_bad_calls_get_tfs_errors(model, batch, case):
    _, fn = model
    args, kwargs = call_of(batch, case)
    with pytest.raises(Exception) as ours:
        fn(*args, **kwargs)
    with pytest.raises(Exception) as tfs:
        tf_call(fn, *args, **kwargs)
    assert type(ours.value) is type(tfs.value) and str(ours.value) == str(tfs.value)


def test_numpy_arguments_are_converted_as_tf_does(model, batch):
    module, fn = model
    values = [t.numpy() for t in batch.values()]
    np.testing.assert_array_equal(fn(*values)["features"].numpy(), module.serve(*batch.values())["features"].numpy())


def test_called_inside_a_tf_function(model, batch):
    module, fn = model
    outer = tf.function(lambda *cols: fn(*cols)["features"] * 2)
    np.testing.assert_array_equal(outer(*batch.values()).numpy(),
                                  module.serve(*batch.values())["features"].numpy() * 2)


def outcome(call, *args):
    try:
        return ("value", tf.nest.map_structure(lambda t: t.numpy().tolist(), call(*args)))
    except Exception as e:  # noqa: BLE001 - compared with TF's
        return (type(e), str(e))


def test_fixed_dims_are_checked(monkeypatch):
    f = tf.function(lambda x: {"y": tf.strings.to_hash_bucket_fast(x, 7) + 1},
                    input_signature=[tf.TensorSpec([None, 2], tf.string)])
    fn = tf_blade.optimize(f, bridge="native").signatures["serving_default"]
    assert isinstance(fn, FastCall)
    x = tf.constant([[b"a", b"b"], [b"", b"c"]])
    np.testing.assert_array_equal(fn(x)["y"].numpy(), f(x)["y"].numpy())
    bad = tf.constant([[b"a", b"b", b"c"]])
    assert outcome(fn, bad) == outcome(lambda t: tf_call(fn, t), bad)  # (TF runs it: no eager shape check)
    monkeypatch.setattr(ConcreteFunction, "_call_impl", lambda self, args, kwargs: "TF's path")
    assert fn(bad) == "TF's path" and fn(x) != "TF's path"


def test_a_parameter_of_unknown_rank_takes_any_rank(monkeypatch):
    f = tf.function(lambda x, n: {"y": tf.strings.to_hash_bucket_fast(x, 7) + 1, "m": tf.reduce_sum(n)},
                    input_signature=[tf.TensorSpec([None, 2], tf.string), tf.TensorSpec(None, tf.int64)])
    fn = tf_blade.optimize(f, bridge="native").signatures["serving_default"]
    assert isinstance(fn, FastCall)
    x = tf.constant([[b"a", b""]])
    expected = f(x, tf.constant([[3]], tf.int64))
    monkeypatch.setattr(ConcreteFunction, "_call_impl", lambda self, args, kwargs: "TF's path")
    for n in (tf.constant(3, tf.int64), tf.constant([[3]], tf.int64)):
        got = fn(x, n)
        np.testing.assert_array_equal(got["y"].numpy(), expected["y"].numpy())
        assert got["m"].numpy() == 3
    assert fn(tf.constant([b"a", b""]), tf.constant(3, tf.int64)) == "TF's path"  # a rank the signature refuses
    assert fn(x, tf.constant(3, tf.int32)) == "TF's path"  # a dtype it refuses
    assert fn(x, 3) == "TF's path"  # not a tensor


def test_blade_function_reuses_its_choice_for_seen_types(model, batch, monkeypatch):
    module, _ = model
    layer = module.layer

    @tf_blade.function(input_signature=[tf.TensorSpec([None, None], tf.string)] * COLUMNS)
    def serve(*cols):  # the fixture's signature: its kernels, no compile of its own
        return layer(dict(zip(column_names(COLUMNS), cols)))

    expected = module.serve(*batch.values())["features"].numpy()
    np.testing.assert_array_equal(serve(*batch.values()).numpy(), expected)
    looked_up = []
    original = type(serve.tf_function).get_concrete_function
    monkeypatch.setattr(type(serve.tf_function), "get_concrete_function",
                        lambda self, *a, **k: looked_up.append(1) or original(self, *a, **k))
    np.testing.assert_array_equal(serve(*batch.values()).numpy(), expected)
    assert not looked_up  # same dtypes and shapes: tf.function's lookup skipped
    shorter = {n: t[:5] for n, t in batch.items()}
    np.testing.assert_array_equal(serve(*shorter.values()).numpy(), expected[:5])
    assert looked_up  # a new shape asks tf.function


def test_load_gives_restored_signatures_the_shortcut(model, batch, tmp_path, monkeypatch):
    module, _ = model
    tf_blade.optimize(module.serve, str(tmp_path / "opt"), bridge="native")
    loaded = tf_blade.load(tmp_path / "opt")
    fn = loaded.signatures["serving_default"]
    assert isinstance(fn, FastCall) and isinstance(fn, ConcreteFunction)
    expected = module.serve(*batch.values())["features"].numpy()
    np.testing.assert_array_equal(fn(**batch)["features"].numpy(), expected)
    with pytest.raises(TypeError):  # a restored signature takes keywords only, as TF's
        fn(*batch.values())
    monkeypatch.setattr(ConcreteFunction, "_call_impl", lambda self, args, kwargs: "TF's path")
    np.testing.assert_array_equal(fn(**batch)["features"].numpy(), expected)
    assert fn(*batch.values()) == "TF's path"


def spy_on(monkeypatch, owner, name, first_argument=lambda first: first):
    """The first arguments (as ``first_argument`` gives them) of the calls of ``owner.name``."""
    seen = []
    original = getattr(owner, name)

    def spy(first, *args, **kwargs):
        seen.append(first_argument(first))
        return original(first, *args, **kwargs)
    monkeypatch.setattr(owner, name, spy)
    return seen


@pytest.fixture
def call_flat_calls(monkeypatch):
    """The calls that reach ConcreteFunction._call_flat (TF's path past the binding)."""
    return spy_on(monkeypatch, ConcreteFunction, "_call_flat")


def test_a_call_nothing_records_runs_the_function_op_itself(model, batch, call_flat_calls):
    module, fn = model
    expected = module.serve(*batch.values())["features"].numpy()
    call_flat_calls.clear()
    np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    assert not call_flat_calls


def test_a_call_under_a_gradient_tape_takes_call_flat(model, batch, call_flat_calls):
    module, fn = model
    expected = module.serve(*batch.values())["features"].numpy()
    call_flat_calls.clear()
    with tf.GradientTape():
        np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    assert call_flat_calls == [fn]


def test_the_function_ops_errors_are_tfs():
    f = tf.function(lambda x: {"y": tf.strings.to_hash_bucket_fast(tf.reshape(x, [-1, 3]), 7)},
                    input_signature=[tf.TensorSpec([None, 2], tf.string)])
    fn = tf_blade.optimize(f, bridge="native").signatures["serving_default"]
    assert isinstance(fn, FastCall) and fn._tf_blade_run is not None
    ok, bad = tf.constant([[b"a", b"b"], [b"c", b"d"], [b"e", b"f"]]), tf.constant([[b"a", b"b"]])
    np.testing.assert_array_equal(fn(ok)["y"].numpy(), f(ok)["y"].numpy())
    ours = outcome(fn, bad)
    assert ours[0] is tf.errors.InvalidArgumentError and ours == outcome(lambda t: tf_call(fn, t), bad)


def test_the_callers_executor_type_is_used(model, batch):
    _, fn = model
    from tensorflow.python.eager.context import function_executor_type
    with function_executor_type("NO_SUCH_EXECUTOR"):
        ours, tfs = outcome(fn, *batch.values()), outcome(lambda *a: tf_call(fn, *a), *batch.values())
    assert ours[0] is tf.errors.NotFoundError and ours == tfs
    assert outcome(fn, *batch.values())[0] == "value"  # the options are read a call at a time


@pytest.fixture
def executed(monkeypatch):
    """The names of the ops and functions execute.execute ran."""
    from tensorflow.python.eager import execute
    return spy_on(monkeypatch, execute, "execute", lambda name: name if isinstance(name, str) else name.decode())


def test_a_function_that_is_one_fused_op_runs_that_op_eagerly(model, batch, executed):
    module, fn = model
    expected = module.serve(*batch.values())["features"].numpy()
    executed.clear()
    np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    assert executed == ["BladeFusedCall"]


def test_a_function_with_other_ops_runs_as_a_function(executed):
    module = criteo_wdl_model(2, 2, dim=4, hidden=(4,))
    fn = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    raw = {**synthetic_batch(5, 2), **synthetic_numeric(5, 2)}
    inputs = {name: tf.constant(value) for name, value in raw.items()}
    expected = module.serve(**inputs)["logit"].numpy()
    executed.clear()
    np.testing.assert_allclose(fn(**inputs)["logit"].numpy(), expected, rtol=1e-6)
    assert len(executed) == 1 and executed[0].startswith("__inference")


def test_when_the_op_fails_where_the_function_does_not_the_function_runs_from_then_on(batch, executed):
    module = criteo_feature_model(COLUMNS, dim=4)
    fn = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    expected = module.serve(*batch.values())["features"].numpy()
    fn._tf_blade_run.op = "NoSuchOp"  # the op cannot run eagerly
    executed.clear()
    for _ in range(2):
        np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    assert executed[0] == "NoSuchOp" and len(executed) == 3 and all(n.startswith("__inference") for n in executed[1:])


def test_the_eager_op_goes_without_its_spec_and_compiles_from_the_registered_one(batch, executed):
    from tf_blade.runtime import native
    module = criteo_feature_model(COLUMNS, dim=5)  # a spec no other test compiled: its first call compiles
    fn = tf_blade.optimize(module.serve, bridge="native").signatures["serving_default"]
    attrs = fn._tf_blade_run.attrs
    assert dict(zip(attrs[::2], attrs[1::2]))["cluster"] == b""
    expected = module.serve(*batch.values())["features"].numpy()
    fallbacks = native.load().fallback_count()
    executed.clear()
    np.testing.assert_array_equal(fn(*batch.values())["features"].numpy(), expected)
    assert executed == ["BladeFusedCall"] and native.load().fallback_count() == fallbacks


def test_an_op_without_its_spec_fails_saying_so_when_none_was_registered():
    from tensorflow.python.eager import context, execute
    attrs = ("Tin", [tf.string.as_datatype_enum], "Tout", [tf.float32.as_datatype_enum], "out_ranks", [2],
             "cluster", b"", "cluster_key", b"never-registered", "fallback", [], "fallback_inputs", 0)
    with pytest.raises(tf.errors.FailedPreconditionError, match="cluster never-registered came without its spec"):
        execute.execute("BladeFusedCall", num_outputs=1, inputs=[tf.constant([["a"]])], attrs=attrs, ctx=context.context())

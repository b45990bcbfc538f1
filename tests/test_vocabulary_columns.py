"""Vocabulary lookups (issue 3/4): LookupTableFindV2 / LookupTableSizeV2 on static tables are
frozen into the fused op (passes/freeze_tables.py). Columns with_vocabulary_list (string with
OOV hash buckets, int64 with a default) and with_vocabulary_file, a vocabulary large enough that
its index enters as fused-op inputs, the string column's lookup and OOV bucket hashing in one
op, a SavedModel round trip (restored tables), a serving
process whose kernel cannot compile (the fused op answers with the original lookups, reading the
tables it was handed for that), and a mutable table, which must stay in TF. Results bit-exact
against TF."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

FC = tf.feature_column
WORDS = ["x", "y", "z", "\u00e9t\u00e9", "a" * 40]
BIG = [f"w{i}" for i in range(3000)]  # index arrays > 1024 elements: passed as op inputs
LOOKUP_OPS = {"LookupTableFindV2", "LookupTableSizeV2", "HashTableV2"}


def _module(tmp_path):
    import tf_keras
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(BIG) + "\n")
    columns = [
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("s", WORDS, num_oov_buckets=3), 4),
        FC.indicator_column(FC.categorical_column_with_vocabulary_list("i", [3, 7, 9, -2**63], dtype=tf.int64,
                                                                        default_value=1)),
        FC.embedding_column(FC.categorical_column_with_vocabulary_file("f", str(vocab_file), len(BIG)), 3,
                            combiner="sum"),
    ]
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    specs = {"s": tf.TensorSpec([None, 3], tf.string), "i": tf.TensorSpec([None, 2], tf.int64),
             "f": tf.TensorSpec([None, 2], tf.string)}
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module


def _batch(rng, n):
    pool = np.array([w.encode() for w in WORDS] + [b"", b"oov", b"X", b"\xff\xfe"], dtype=object)
    big = np.array([w.encode() for w in BIG[:50] + BIG[-50:]] + [b"", b"w3000", b"w-1"], dtype=object)
    ints = np.array([3, 7, 9, -2**63, 2**63 - 1, 0, -1, 8], np.int64)
    return {"s": tf.constant(pool[rng.integers(0, len(pool), (n, 3))]),
            "i": tf.constant(ints[rng.integers(0, len(ints), (n, 2))]),
            "f": tf.constant(big[rng.integers(0, len(big), (n, 2))])}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vocab")
    module = _module(tmp)
    opt = tf_blade.optimize(module, str(tmp / "optimized"))
    return module, opt, tmp


def test_lookups_fuse_into_one_op(models):
    _, opt, _ = models
    counts = op_counts(opt.signatures["serve"])
    assert counts["BladeFusedCall"] == 1 and not LOOKUP_OPS & set(counts), counts


def test_a_vocabulary_with_oov_buckets_hashes_each_string_once(tmp_path):
    """Column "s" (3 OOV buckets): its lookup, the bucket hash of the same strings and the select
    between them become one _BladeTableFindOrBucket (feature_column/vocabulary_oov.py); that and
    the file column's lookup, with their id filters and embedding bags, then become one
    _BladeVocabularyBag each (feature_column/vocabulary_bag.py). test_vocabulary_columns_match_tensorflow
    checks them against TF."""
    from conftest import fused_specs
    from tf_blade.feature_column import SPEC_REWRITES
    (spec,) = fused_specs(_module(tmp_path), signature="serve")
    for rewrite in SPEC_REWRITES:
        spec, n = rewrite(spec)
        if rewrite.__name__ == "fuse_vocabulary_buckets":
            assert n == 1
    ops = [node["op"] for node in spec["nodes"]]
    bags = {node["attrs"]["num_buckets"]: node["attrs"] for node in spec["nodes"]
            if node["op"] == "_BladeVocabularyBag"}
    assert sorted(bags) == [0, 3] and all(a["drop_negative"] for a in bags.values()), bags
    assert not {"StringToHashBucketFast", "SelectV2", "_BladeTableFindOrBucket"} & set(ops), ops
    assert ops.count("_BladeTableFind") == 1, ops  # the int column's (a default, no buckets, no bag)


@pytest.mark.parametrize("n", [0, 1, 200])
def test_vocabulary_columns_match_tensorflow(models, rng, n):
    module, opt, _ = models
    x = _batch(rng, n)
    want = module.serve(x).numpy()
    got = opt.signatures["serve"](**{"x_" + k: v for k, v in x.items()}).numpy()
    np.testing.assert_array_equal(want, got)


def test_saved_model_round_trip_freezes_restored_tables(models, rng):
    module, _, tmp = models
    tf.saved_model.save(module, str(tmp / "original"), signatures={"serving_default": module.serve.get_concrete_function()})
    opt = tf_blade.optimize(str(tmp / "original"), str(tmp / "reoptimized"))  # saves the restored tables too
    fn = opt.signatures["serving_default"]
    assert not LOOKUP_OPS & set(op_counts(fn))
    x = _batch(rng, 64)
    key = next(iter(fn.structured_outputs))
    # The saved signature flattened the input dict (sorted keys) into x, x_1, x_2: keywords only,
    # in process as after loading
    names = sorted(fn.structured_input_signature[1])
    np.testing.assert_array_equal(module.serve(x).numpy(), fn(**dict(zip(names, [x[k] for k in sorted(x)])))[key].numpy())
    reloaded = tf.saved_model.load(str(tmp / "optimized")).signatures["serve"]  # the SavedModel optimize() wrote
    # keyed as stock TF keys the saved signature, x, x_1, x_2 (in process: x_f, x_i, x_s)
    stock = tf.saved_model.load(str(tmp / "original")).signatures["serving_default"]
    assert reloaded.structured_input_signature == stock.structured_input_signature
    assert np.array_equal(module.serve(x).numpy(), reloaded(**dict(zip(names, [x[k] for k in sorted(x)])))["output_0"].numpy())
    again = tf.saved_model.load(str(tmp / "reoptimized")).signatures["serving_default"]
    names = sorted(again.structured_input_signature[1])  # x, x_1, x_2 as above
    np.testing.assert_array_equal(module.serve(x).numpy(), again(**dict(zip(names, [x[k] for k in sorted(x)])))[key].numpy())


_SERVE_WITHOUT_KERNEL = """
import sys
import numpy as np, tensorflow as tf
import tf_blade
from tf_blade.runtime import bridge
native = bridge.native_bridge()
def compile_fails(spec, dtypes, ranks):
    raise RuntimeError("injected: no compiler here")
native.set_compile_callback(compile_fails)
io = np.load(sys.argv[1] + "/io.npz", allow_pickle=True)
serve = tf.saved_model.load(sys.argv[1] + "/optimized").signatures["serve"]
got = serve(**{key: tf.constant(io[k]) for key, k in (("x", "f"), ("x_1", "i"), ("x_2", "s"))})["output_0"].numpy()
np.testing.assert_array_equal(got, io["expected"])
print("SERVED", native.fallback_count())
"""


def test_frozen_lookups_fall_back_to_the_tables_when_the_kernel_cannot_compile(models, rng):
    import os
    import subprocess
    import sys
    module, _, tmp = models
    x = _batch(rng, 40)
    np.savez(tmp / "io.npz", expected=module.serve(x).numpy(), **{k: v.numpy() for k, v in x.items()})
    result = subprocess.run([sys.executable, "-c", _SERVE_WITHOUT_KERNEL, str(tmp)], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="1"), timeout=600)
    assert result.returncode == 0 and "SERVED 1" in result.stdout, result.stderr[-3000:]
    logged = [line for line in result.stderr.splitlines() if "runs its original TensorFlow ops" in line]
    assert len(logged) == 1 and "injected: no compiler here" in logged[0], result.stderr[-3000:]


def test_mutable_table_stays_in_tensorflow():
    table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, default_value=-1)
    table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
    module = tf.Module()
    module.table = table
    module.serve = tf.function(lambda x: table.lookup(x) * 2 + 1, input_signature=[tf.TensorSpec([None], tf.string)])
    opt = tf_blade.optimize(module, min_cluster_size=1)
    assert op_counts(opt.signatures["serve"])["LookupTableFindV2"] == 1
    table.insert(tf.constant(["c"]), tf.constant([3], tf.int64))  # later inserts must be seen
    np.testing.assert_array_equal(opt.signatures["serve"](x=tf.constant(["a", "c", "z"])).numpy(), [3, 7, -1])


def test_a_concrete_functions_tables_stay_in_tf_and_the_report_says_why(tmp_path, rng):
    """A ConcreteFunction keeps no Python function, so nothing names the tables it captures as
    static: its lookups stay in TF, and the report says what to pass instead (not "no lowering")."""
    from tf_blade.passes.support import UNFROZEN_TABLE
    layer = _module(tmp_path).layer
    specs = {"s": tf.TensorSpec([None, 3], tf.string), "i": tf.TensorSpec([None, 2], tf.int64),
             "f": tf.TensorSpec([None, 2], tf.string)}
    serve = tf.function(lambda x: layer(x), input_signature=[specs])
    opt = tf_blade.optimize(serve.get_concrete_function())
    assert op_counts(opt.signatures["serving_default"])["LookupTableFindV2"] >= 1
    assert f"LookupTableFindV2: {UNFROZEN_TABLE}" in str(opt.report), opt.report
    x = _batch(rng, 16)
    np.testing.assert_array_equal(serve(x).numpy(),
                                  opt.signatures["serving_default"](**{"x_" + k: v for k, v in x.items()}).numpy())


def test_bare_tf_function_and_the_decorator_find_their_tables(tmp_path, rng):
    """A bare tf.function has no trackable root: its static tables are found through the layer
    its Python code refers to (frontend.python_root), for optimize() and for @tf_blade.function."""
    layer = _module(tmp_path).layer
    specs = {"s": tf.TensorSpec([None, 3], tf.string), "i": tf.TensorSpec([None, 2], tf.int64),
             "f": tf.TensorSpec([None, 2], tf.string)}

    @tf.function(input_signature=[specs])
    def serve(x):
        return layer(x)

    @tf_blade.function(input_signature=[specs])
    def served(x):
        return layer(x)
    fn = tf_blade.optimize(serve).signatures["serving_default"]
    x = _batch(rng, 64)
    want = serve(x).numpy()
    np.testing.assert_array_equal(want, fn(**{"x_" + k: v for k, v in x.items()}).numpy())
    np.testing.assert_array_equal(want, served(x).numpy())
    (_, decorated, _), = served.optimized.values()
    for f in (fn, decorated):
        counts = op_counts(f)
        assert counts["BladeFusedCall"] == 1 and not LOOKUP_OPS & set(counts), counts


def test_python_root_finds_a_table_by_its_shortest_path():
    """The search is depth limited: a long path that reaches a list at its last level must not
    hide the table a short path to the same list finds (the search once went depth first, and
    which path came first followed PYTHONHASHSEED)."""
    from tf_blade.graph.frontend import python_root
    table = tf.Module()
    holder = [table]

    def far():
        return holder

    def near():
        return far()

    def serve():  # the closure (near -> far -> holder) is searched before holder, a global
        return near(), _HOLDERS

    _HOLDERS.append(holder)
    try:
        root = python_root(serve, depth=3)
        assert root is not None and any(obj is table for obj in root.referenced)
    finally:
        _HOLDERS.clear()


_HOLDERS = []


def test_the_fused_op_does_not_depend_on_the_order_tf_exports_a_table_in(models, monkeypatch):
    """TF exports a table in its hash map's order, which changes from process to process; the
    frozen constants must not follow it, or every new process generates other source and misses
    the disk cache (a warm start recompiled a vocabulary model's lookup parts)."""
    from conftest import running_nodes
    from tf_blade import api
    module, opt, _ = models
    export = api.export_table
    monkeypatch.setattr(api, "export_table", lambda *a: tuple(x[::-1] for x in export(*a)))
    again = tf_blade.optimize(module)
    keys = [[n.attr["cluster_key"].s for n in running_nodes(o.signatures["serve"].graph.as_graph_def())
             if n.op.startswith("BladeFusedCall")] for o in (opt, again)]
    assert keys[0] == keys[1] and len(keys[0]) == 1

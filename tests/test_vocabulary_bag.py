"""The fused vocabulary bag (feature_column/vocabulary_bag.py): the kernel against TF's own column
chain (frozen lookup, id filter, SparseReshape, embedding bag), and the rewrite on feature-column
models, bit-exact against TF."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import fused_specs
from test_embedding_bag import COMBINERS, tf_chain
from test_string_bag import POOL, pool, same_as_tf
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.kernels import table_lookup
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.vocabulary_bag import vocabulary_bag

FC = tf.feature_column
VOCAB = [b"a", b"id_7", "\u00e9t\u00e9 \u4e2d".encode(), b"x" * 300, b"8" * 23, b"k1", b"k2"]
QUERIES = POOL + [b"k1", b"k2", b"k3", b"A", b"a "]  # in and out of the vocabulary, empty, long


def tf_vocab_chain(strings, new_shape, table, num_oov, default, filtered, combiner):
    """What a vocabulary embedding column computes from a dense string input, op for op."""
    s = tf.constant(strings, tf.string)
    where = tf.where(tf.not_equal(s, ""))
    init = tf.lookup.KeyValueTensorInitializer(tf.constant(VOCAB), tf.range(len(VOCAB), dtype=tf.int64))
    lookup = (tf.lookup.StaticVocabularyTable(init, num_oov) if num_oov
              else tf.lookup.StaticHashTable(init, default))
    ids = lookup.lookup(tf.gather_nd(s, where))
    return tf_bag_of_ids(where, ids, tf.shape(s, out_type=tf.int64), new_shape, filtered, table, combiner)


def tf_bag_of_ids(where, ids, shape, new_shape, filtered, table, combiner):
    """The rest of a categorical column's embedding over the ids of the values at ``where`` of a
    dense input of ``shape``, op for op: SparseReshape (unless ``new_shape`` is None), the id filter
    (``filtered``), the embedding bag."""
    if new_shape is not None:
        where, shape = tf.raw_ops.SparseReshape(input_indices=where, input_shape=shape,
                                                new_shape=tf.constant(new_shape, tf.int64))
    if filtered:
        keep = tf.reshape(tf.where(ids >= 0), [-1])
        where, ids = tf.gather(where, keep), tf.gather(ids, keep)
    return tf_chain(where, ids, shape, table, combiner)


def _index():
    offsets = np.zeros(len(VOCAB) + 1, np.int64)
    offsets[1:] = np.cumsum([len(k) for k in VOCAB])
    data = np.frombuffer(b"".join(VOCAB), np.uint8).copy()
    return table_lookup.build_string(offsets, data), offsets, data, np.arange(len(VOCAB), dtype=np.int64)


def _run(strings, new_shape, table, num_oov, default, filtered, mode):
    handles, offsets, data = pool(strings)
    shape = np.array(new_shape if new_shape is not None else strings.shape, np.int64)
    err = new_error_buffer()
    out = vocabulary_bag(handles, offsets, data, shape, table, np.array([default], np.int64), *_index(), num_oov,
                         np.array([len(VOCAB)], np.int64), filtered, mode, err)
    return out, (error_text(err) if err[0] else None)


# (num_oov, default, filtered): a list with OOV buckets; without, its -1 filtered (a column's
# default); a default inside the vocabulary with the filter (a column's default_value=k) and without.
LOOKUPS = [(3, -1, True), (1, -1, True), (0, -1, True), (0, 2, True), (0, 2, False)]


@pytest.mark.parametrize("lookup", LOOKUPS)
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_kernel_matches_tf_chain(lookup, mode):
    num_oov, default, filtered = lookup
    rng = np.random.default_rng()
    for rows, k in ((0, 4), (1, 1), (7, 4), (64, 3), (33, 30)):  # 30 slots: TF's 8-wide blocks too
        strings = rng.choice(np.array(QUERIES, object), size=(rows, k))
        strings[rng.random(rows) < 0.2] = b""                       # empty rows
        dtype = rng.choice([np.float32, np.float64])
        table = rng.standard_normal((len(VOCAB) + num_oov, 5)).astype(dtype)
        for new_shape in (None, [rows, k], [-1, k], [rows * k, -1], [rows * k, 1]):
            got, err = _run(strings, new_shape, table, num_oov, default, filtered, mode)  # an error: [0, -1], 0 rows
            same_as_tf(got, err, lambda: tf_vocab_chain(strings, new_shape, table, num_oov, default, filtered,
                                                        COMBINERS[mode]))


def test_kernel_drops_filtered_ids_row_by_row():
    strings = np.array([[b"k3", b"a", b"", b"k1"], [b"k3", b"", b"zz", b""], [b"k2", b"k2", b"k2", b"k2"]], object)
    table = np.arange(14, dtype=np.float32).reshape(7, 2)
    for new_shape in (None, [6, 2], [1, 12]):
        got, err = _run(strings, new_shape, table, 0, -1, True, 0)
        assert err is None, err
        np.testing.assert_array_equal(got, tf_vocab_chain(strings, new_shape, table, 0, -1, True, "sum").numpy())


@pytest.mark.parametrize("new_shape", [[3, 3], [-1, -1], [2, -5], [0, -1]])
def test_bad_shape_gets_tf_sparse_reshape_message(new_shape):
    strings = np.array([[b"a", b"k1"], [b"", b"zz"]], object)
    table = np.ones((len(VOCAB), 3), np.float32)
    _, err = _run(strings, new_shape, table, 0, -1, True, 1)
    assert err is not None
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
        tf_vocab_chain(strings, new_shape, table, 0, -1, True, "mean")
    assert err in tf_err.value.message


@pytest.mark.parametrize("lookup, table_rows, bad", [
    ((0, -1, False), len(VOCAB), "-1 is not in [0, 7)"),   # a missing string's -1 with no filter to drop it
    ((4, -1, True), len(VOCAB), " is not in [0, 7)"),     # OOV buckets past the table
    ((0, -1, True), 2, " is not in [0, 2)")])              # a vocabulary larger than its table
def test_ids_outside_the_table_are_the_gathers_error(lookup, table_rows, bad):
    num_oov, default, filtered = lookup
    strings = np.array([[b"a", b"k2"], [b"zz", b"x" * 300]], object)
    table = np.ones((table_rows, 3), np.float32)
    _, err = _run(strings, None, table, num_oov, default, filtered, 0)
    assert err is not None and bad in err, err
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"is not in \[0, %d\)" % table_rows):
        tf_vocab_chain(strings, None, table, num_oov, default, filtered, "sum")


# A feature layer of vocabulary columns of every kind the rewrite takes: lists with OOV buckets
# (two counts: one template), without (its -1 filtered), with a default inside the vocabulary, a
# file, each combiner, and one int-keyed column.
def _vocabulary_model(tmp_path):
    import tf_keras
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(w.decode() for w in VOCAB[:2] + VOCAB[5:]) + "\n")
    words = [w.decode() for w in VOCAB]
    columns = [
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("oov", words, num_oov_buckets=2), 3),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("drop", words), 4, combiner="sum"),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("dflt", words, default_value=1), 2,
                            combiner="sqrtn"),
        FC.embedding_column(FC.categorical_column_with_vocabulary_file("file", str(vocab_file), 4), 3),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("deep", words, num_oov_buckets=1), 2),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("ints", [4, 8], dtype=tf.int64), 2),
    ]
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    specs = {name: tf.TensorSpec([None, 3], tf.string) for name in ("oov", "drop", "dflt", "file")}
    specs.update(deep=tf.TensorSpec([None, 2], tf.string), ints=tf.TensorSpec([None, 2], tf.int64))
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module


def _batch(rng, n):
    pool = np.array(QUERIES, object)
    out = {name: pool[rng.integers(0, len(pool), (n, 3))] for name in ("oov", "drop", "dflt", "file")}
    out["deep"] = pool[rng.integers(0, len(pool), (n, 2))]
    out["ints"] = rng.choice(np.array([4, 8, 5, -1], np.int64), (n, 2))
    if n:
        out["drop"][0] = b""          # an empty row, and one of words outside the vocabulary only
        out["drop"][-1] = b"k3"
    return {k: tf.constant(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def vocabulary_model(tmp_path_factory):
    module = _vocabulary_model(tmp_path_factory.mktemp("vocabulary_bag"))
    return module, tf_blade.optimize(module)


def test_every_string_vocabulary_column_becomes_one_bag(tmp_path):
    (spec,) = fused_specs(_vocabulary_model(tmp_path), signature="serve")
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [node["op"] for node in spec["nodes"]]
    bags = sorted((n["attrs"]["num_buckets"], n["attrs"]["mode"]) for n in spec["nodes"]
                  if n["op"] == "_BladeVocabularyBag")
    assert bags == [(0, 0), (0, 1), (0, 2), (1, 1), (2, 1)], bags
    assert ops.count("_BladeIntBag") == 1, ops  # the int column's (test_int_bag.py)
    assert not {"_BladeTableFind", "_BladeTableFindOrBucket", "_BladeEmbeddingBag", "GatherNd"} & set(ops), ops


@pytest.mark.parametrize("n", [0, 1, 64])
def test_vocabulary_bags_match_tensorflow(vocabulary_model, rng, n):
    module, opt = vocabulary_model
    x = _batch(rng, n)
    want = module.serve(x).numpy()
    got = opt.signatures["serve"](**{"x_" + k: v for k, v in x.items()}).numpy()
    np.testing.assert_array_equal(want, got)

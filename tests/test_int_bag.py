"""The fused integer bag (feature_column/int_bag.py): identity, integer-vocabulary and hashed integer
columns, the kernel against TF's own chain and the rewrite on feature-column models, bit-exact."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import fused_specs
from test_embedding_bag import COMBINERS
from test_string_bag import same_as_tf
from test_vocabulary_bag import tf_bag_of_ids
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.kernels import table_lookup
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.int_bag import HASH, IDENTITY, IDENTITY_DEFAULT, VOCABULARY, int_bag

FC = tf.feature_column
KEYS = np.array([3, 7, 9, 0, -5, 2**62, -2**63], np.int64)
VALUES = [3, 7, 9, 0, 1, 2, 4, 5, 6, -1, -5, 2**62, -2**63, 2**63 - 1, 11]  # in and out of KEYS


def tf_int_chain(x, new_shape, table, kind, ignore, default, filtered, num_buckets, combiner):
    """What an integer embedding column computes from a dense input, op for op."""
    x = tf.constant(x)
    where = tf.where(tf.not_equal(x, tf.constant(ignore, x.dtype)))
    values = tf.gather_nd(x, where)
    if kind == IDENTITY:
        ids = tf.cast(values, tf.int64)
    elif kind == IDENTITY_DEFAULT:  # as IdentityCategoricalColumn writes it
        ids = tf.cast(values, tf.int64)
        outside = tf.logical_or(ids >= num_buckets, ids < 0)
        ids = tf.where(outside, tf.fill(tf.shape(ids), tf.constant(default, tf.int64)), ids)
    elif kind == VOCABULARY:
        init = tf.lookup.KeyValueTensorInitializer(tf.constant(KEYS), tf.range(len(KEYS), dtype=tf.int64))
        ids = tf.lookup.StaticHashTable(init, default).lookup(tf.cast(values, tf.int64))
    else:
        ids = tf.strings.to_hash_bucket_fast(tf.strings.as_string(values), num_buckets)
    return tf_bag_of_ids(where, ids, tf.shape(x, out_type=tf.int64), new_shape, filtered, table, combiner)


def _run(x, new_shape, table, kind, ignore, default, filtered, num_buckets, mode):
    shape = np.array(new_shape if new_shape is not None else x.shape, np.int64)
    err = new_error_buffer()
    one = np.array([ignore], x.dtype)
    index = ((np.array([default], np.int64), table_lookup.build_int(KEYS), KEYS, np.arange(len(KEYS), dtype=np.int64))
             if kind == VOCABULARY else (np.array([default], np.int64),) + (one,) * 3)
    out = int_bag(x, shape, table, one, kind, *index, num_buckets, filtered, mode, err)
    return out, (error_text(err) if err[0] else None)


# (kind, ignore, default, filtered, num_buckets, table rows)
COLUMNS = [(IDENTITY, -1, 0, True, 0, 16), (VOCABULARY, -1, -1, True, 0, len(KEYS)),
           (VOCABULARY, 0, 2, False, 0, len(KEYS)), (HASH, -1, 0, False, 13, 13), (HASH, 7, 0, True, 1, 1),
           (IDENTITY_DEFAULT, -1, 5, True, 12, 16), (IDENTITY_DEFAULT, 0, 3, False, 16, 16)]


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_kernel_matches_tf_chain(column, mode):
    kind, ignore, default, filtered, num_buckets, n_table = column
    rng = np.random.default_rng()
    for rows, k in ((0, 4), (1, 1), (7, 4), (64, 3), (33, 30)):
        identity = kind in (IDENTITY, IDENTITY_DEFAULT)
        dtype = np.int32 if identity and rng.random() < 0.5 else np.int64
        pool = np.arange(-3, 19) if identity else np.array(VALUES, np.int64)
        x = rng.choice(pool, size=(rows, k)).astype(dtype)
        x[rng.random(rows) < 0.2] = ignore                           # empty rows
        table = rng.standard_normal((n_table, 5)).astype(rng.choice([np.float32, np.float64]))
        for new_shape in (None, [rows, k], [-1, k], [rows * k, -1], [1, rows * k]):
            args = (x, new_shape, table, kind, ignore, default, filtered, num_buckets)
            got, err = _run(*args, mode)  # an error: an id outside the table, or [0, -1] of an empty batch
            # an id's position differs from TF's (its gather numbers Unique's ids): its value and the range match
            same_as_tf(got, err and err.split("] = ")[-1], lambda: tf_int_chain(*args, COMBINERS[mode]))


@pytest.mark.parametrize("x, bad", [([[3, 40]], "40 is not in [0, 16)"), ([[2**62, 1]], " is not in [0, 16)"),
                                    ([[-3, 1]], "-3 is not in [0, 16)")])
def test_an_id_outside_the_table_is_the_gathers_error(x, bad):
    x = np.array(x, np.int64)
    table = np.ones((16, 2), np.float32)
    _, err = _run(x, None, table, IDENTITY, -1, 0, False, 0, 0)
    assert err is not None and bad in err, err
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not in"):
        tf_int_chain(x, None, table, IDENTITY, -1, 0, False, 0, "sum")


INPUTS = ("ident", "ident_dflt", "vocab", "file", "hashed", "ident32", "vocab32")


def _int_model(tmp_path):
    import tf_keras
    vocab_file = tmp_path / "ints.txt"
    vocab_file.write_text("\n".join(str(v) for v in KEYS[:5]) + "\n")
    columns = [
        FC.embedding_column(FC.categorical_column_with_identity("ident", 16), 3),
        FC.embedding_column(FC.categorical_column_with_identity("ident_dflt", 16, default_value=2), 2,
                            combiner="sum"),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("vocab", KEYS.tolist(), dtype=tf.int64), 4,
                            combiner="sqrtn"),
        FC.embedding_column(FC.categorical_column_with_vocabulary_file("file", str(vocab_file), 5, dtype=tf.int64,
                                                                       num_oov_buckets=0, default_value=4), 3),
        FC.embedding_column(FC.categorical_column_with_hash_bucket("hashed", 30, dtype=tf.int64), 2),
        # int32 inputs: the ids are Cast to int64 after the GatherNd
        FC.embedding_column(FC.categorical_column_with_identity("ident32", 16, default_value=0), 2),
        FC.embedding_column(FC.categorical_column_with_vocabulary_list("vocab32", [3, 7, -5], dtype=tf.int32), 3),
    ]
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    specs = {name: tf.TensorSpec([None, 3], tf.int32 if name.endswith("32") else tf.int64) for name in INPUTS}
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module


def test_every_integer_column_becomes_one_bag(tmp_path):
    (spec,) = fused_specs(_int_model(tmp_path), signature="serve")
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [node["op"] for node in spec["nodes"]]
    kinds = sorted(node["attrs"]["kind"] for node in spec["nodes"] if node["op"] == "_BladeIntBag")
    assert kinds == [IDENTITY, VOCABULARY, VOCABULARY, VOCABULARY, HASH, IDENTITY_DEFAULT, IDENTITY_DEFAULT], kinds
    assert not {"_BladeEmbeddingBag", "GatherNd", "SelectV2", "_BladeTableFind", "_BladeHashInts"} & set(ops), ops


@pytest.fixture(scope="module")
def int_model(tmp_path_factory):
    module = _int_model(tmp_path_factory.mktemp("int_bag"))
    return module, tf_blade.optimize(module)


@pytest.mark.parametrize("n", [0, 1, 64])
def test_integer_bags_match_tensorflow(int_model, rng, n):
    module, opt = int_model
    values = np.array(VALUES, np.int64)
    x = {name: rng.choice(values, (n, 3)) for name in ("vocab", "file", "hashed")}
    x.update({name: rng.integers(-1, 16, (n, 3)) for name in ("ident", "vocab32")})  # -1: padding
    x.update({name: rng.integers(-3, 20, (n, 3)) for name in ("ident_dflt", "ident32")})  # outside [0, 16): the default
    x.update({name: x[name].astype(np.int32) for name in ("ident32", "vocab32")})
    x = {k: tf.constant(v) for k, v in x.items()}
    want = module.serve(x).numpy()
    got = opt.signatures["serve"](**{"x_" + k: v for k, v in x.items()}).numpy()
    np.testing.assert_array_equal(want, got)

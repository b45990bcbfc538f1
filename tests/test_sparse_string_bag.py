"""Hash-bucket embedding columns over SparseTensor strings (feature_column/sparse_string_bag.py): the
kernel against TF's own column ops on raw components (unsorted, empty rows, "" values, rank 3,
lengths that do not pair), bad input against TF's errors, and a feature layer of such columns."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import error_core, fused_specs
from test_string_bag import pool
from test_weighted_bag import COMBINERS
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.sparse_string_bag import sparse_string_bag

WORDS = np.array([b"a", b"b", b"", b"longer than twenty-two bytes", "\u00e9".encode(), b"c"], dtype=object)


def tf_sparse_column(indices, values, dense_shape, table, buckets, combiner):
    """What a hashed column embeds from a SparseTensor given as components, traced (eager, a
    SparseTensor of unpaired components is refused before TF's kernels run), as [rows, dim]."""
    weights = tf.Variable(table)  # a column's table: its gather is ResourceGather's
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int64), tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.int64)])
    def column(i, v, s):
        ids = tf.SparseTensor(i, tf.strings.to_hash_bucket_fast(v, buckets), s)
        out = tf.nn.safe_embedding_lookup_sparse(weights, ids, None, combiner=combiner)
        return tf.reshape(out, [-1, table.shape[1]])
    return column(indices, values, dense_shape)


def _indices(indices, rank):
    indices = np.array(indices, np.int64)
    return indices if indices.ndim == 2 else indices.reshape(0, rank)


def _run(indices, values, dense_shape, table, buckets, mode):
    err = new_error_buffer()
    ids, offsets, data = pool(np.array(values, dtype=object).reshape(-1))
    dense_shape = np.array(dense_shape, np.int64)
    new_shape = np.array([np.prod(dense_shape[:-1]), dense_shape[-1]], np.int64)
    out = sparse_string_bag(_indices(indices, len(dense_shape)), ids, offsets, data,
                            dense_shape, new_shape, table, buckets, mode, err)
    return out, (error_text(err) if err[0] else None)


def _same(got, err, indices, values, dense_shape, table, buckets, combiner):
    args = (_indices(indices, len(dense_shape)), np.array(values, dtype=object).astype(bytes),
            np.array(dense_shape, np.int64), table, buckets, combiner)
    if err is not None:
        with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
            tf_sparse_column(*args)
        assert err == error_core(theirs.value.message)
        return
    np.testing.assert_array_equal(got, tf_sparse_column(*args).numpy())


@pytest.mark.parametrize("mode", list(COMBINERS))
@pytest.mark.parametrize("rank", [2, 3])
def test_kernel_matches_tf(mode, rank):
    rng = np.random.default_rng()
    table = rng.standard_normal((50, 5)).astype(np.float32)
    for rows in (0, 1, 7, 64):
        shape = [rows, 6] if rank == 2 else [rows, 2, 3]
        dense = rng.random((rows, 6)) < rng.choice([0.0, 0.3, 0.9])  # empty rows, and rows of 20+ ids below
        if rows > 1:
            dense[-1] = True
        coords = np.argwhere(dense.reshape([rows] + shape[1:]))
        if rng.random() < 0.5:
            coords = coords[rng.permutation(len(coords))]  # unsorted: the fill keeps input order per row
        values = WORDS[rng.integers(0, len(WORDS), len(coords))]
        got, err = _run(coords, values, shape, table, 50, mode)
        assert err is None, err
        _same(got, err, coords, values, shape, table, 50, COMBINERS[mode])


def test_long_rows_reduce_in_tfs_order():
    rng = np.random.default_rng()
    table = rng.standard_normal((1000, 16)).astype(np.float32)
    coords = np.argwhere(np.ones((5, 40), bool))
    values = np.array([f"v{k}".encode() for k in rng.integers(0, 10 ** 6, len(coords))], dtype=object)
    for mode, combiner in COMBINERS.items():
        got, err = _run(coords, values, [5, 40], table, 1000, mode)
        _same(got, err, coords, values, [5, 40], table, 1000, combiner)


@pytest.mark.parametrize("indices, values, shape", [
    ([[0, 0], [1, 0]], [b"a", b"b"], [3, 2, 1]),           # indices of another rank than the shape
    ([[0, 0]], [b"a", b"b"], [3, 2]),                      # more values than indices: the filter's gather
    ([[0, 0], [2, 1], [1, 0]], [b"a", b"b"], [3, 2]),      # fewer: the indices past them are dropped
    ([[5, 0]], [b"a"], [3, 2]),                            # a row outside the shape
    ([[-1, 0]], [b"a"], [3, 2]),                           # a negative row
    ([[0, 0]], [b"a"], [-3, 2]),                           # a negative dense shape
    ([[0, 0]], [b"a"], [0, 2]),                            # entries, but no rows
])
def test_bad_input_is_tfs_error_or_answer(indices, values, shape):
    table = np.ones((40, 3), np.float32)
    got, err = _run(indices, values, shape, table, 40, 1)
    _same(got, err, indices, values, shape, table, 40, "mean")


def test_buckets_past_the_table_are_the_gathers_error():
    table = np.ones((2, 3), np.float32)
    values = [b"a", b"b", b"c", b"d", b"e"]
    got, err = _run([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0]], values, [3, 2], table, 40, 0)
    assert err is not None and "is not in [0, 2)" in err
    _same(got, err, [[0, 0], [0, 1], [1, 0], [1, 1], [2, 0]], values, [3, 2], table, 40, "sum")


COMBINED = ("mean", "sum", "sqrtn")


def _layer():
    """Three hashed columns over sparse strings s0-s2 (one a combiner) and one over dense [n, 3] d."""
    import tf_keras
    fc = tf.feature_column
    columns = [fc.embedding_column(fc.categorical_column_with_hash_bucket(f"s{i}", 30 + i), 4, combiner=c)
               for i, c in enumerate(COMBINED)]
    columns.append(fc.embedding_column(fc.categorical_column_with_hash_bucket("d", 20), 4))  # a dense one beside
    return tf_keras.layers.DenseFeatures(columns)


def _sparse_layer():
    specs = {f"s{i}": tf.SparseTensorSpec([None, None], tf.string) for i in range(len(COMBINED))}
    specs["d"] = tf.TensorSpec([None, 3], tf.string)
    layer = _layer()
    return tf.function(lambda x: layer(x), input_signature=[specs])


def test_sparse_hashed_columns_become_one_op_each():
    (spec,) = fused_specs(_sparse_layer())
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    ops = [node["op"] for node in spec["nodes"]]
    assert ops.count("_BladeSparseStringBag") == 3, ops
    assert not {"StringToHashBucketFast", "SparseReshape", "Where", "_BladeEmbeddingBag"} & set(ops), ops


@pytest.fixture(scope="module")
def sparse_layer():
    stock = _sparse_layer()
    return stock, tf_blade.optimize(stock, bridge="native")


# 3000 rows: the output concat (48000 elements) copies its rows on both cores, in two blocks
# (kernels/concat.py concat_into_wide), the second one short
@pytest.mark.parametrize("n", [0, 1, 64, 3000])
def test_sparse_hashed_columns_match_tensorflow(sparse_layer, rng, n):
    stock, opt = sparse_layer
    x = {"d": tf.constant(WORDS[rng.integers(0, len(WORDS), (n, 3))].astype(bytes).reshape(n, 3))}
    for i in range(3):
        coords = np.argwhere(rng.random((n, 5)) < 0.5)
        x[f"s{i}"] = tf.SparseTensor(coords, WORDS[rng.integers(0, len(WORDS), len(coords))].astype(bytes), [n, 5])
    want, got = stock(x).numpy(), opt(x).numpy()
    assert got.tobytes() == want.tobytes()


def _example(rng):
    """A serialized tf.Example of _layer's features: 0-4 strings a sparse one (none: absent), 3 for d."""
    def strings(n):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(WORDS[rng.integers(0, len(WORDS), n)])))
    feature = {f"s{i}": strings(rng.integers(0, 5)) for i in range(len(COMBINED)) if rng.random() < 0.8}
    feature["d"] = strings(3)
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_a_saved_model_serving_tf_examples_matches_tensorflow(tmp_path, rng):
    """The form a model server calls: serialized tf.Examples parsed by the signature itself. The
    parse stays TF's; the columns over its SparseTensors are the fused op."""
    features = {f"s{i}": tf.io.VarLenFeature(tf.string) for i in range(len(COMBINED))}
    features["d"] = tf.io.FixedLenFeature([3], tf.string)
    module = tf.Module()
    module.layer = _layer()
    module.serve = tf.function(lambda s: {"features": module.layer(tf.io.parse_example(s, features))},
                               input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    tf.saved_model.save(module, str(tmp_path / "stock"), signatures={"serving_default": module.serve})
    report = tf_blade.optimize(str(tmp_path / "stock"), str(tmp_path / "opt"), bridge="native").report
    assert report.fused_ops == 1 and "ParseExampleV2" in str(report), str(report)
    stock = tf.saved_model.load(str(tmp_path / "stock")).signatures["serving_default"]
    fused = tf_blade.load(str(tmp_path / "opt")).signatures["serving_default"]
    for n in (0, 1, 64):
        examples = tf.constant([_example(rng) for _ in range(n)], tf.string)
        want, got = stock(examples=examples)["features"].numpy(), fused(examples=examples)["features"].numpy()
        assert got.shape == (n, 16) and got.tobytes() == want.tobytes()

"""The fused weighted embedding bags (feature_column/weighted_bag.py): the tail kernel against TF's
own chain, the whole-column kernels against TF's lookup (their pairing of ids and weights too), bad
input against TF's errors, and weighted columns of a model: bit-exact but for NaN payloads."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import error_core, fused_specs
from test_string_bag import pool, same_as_tf
from tf_blade.feature_column import SPEC_REWRITES
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.int_bag import IDENTITY
from tf_blade.kernels.weighted_bag import MEAN, SQRTN, SUM, dense_weighted_int_bag, dense_weighted_string_bag, weighted_bag

FC = tf.feature_column
COMBINERS = {SUM: "sum", MEAN: "mean", SQRTN: "sqrtn"}


def tf_weighted_chain(indices, ids, weights, dense_shape, table, combiner):
    """What a weighted embedding_lookup_sparse + the empty-row zeroing compute, op for op (raw
    fills: a SparseTensor of mismatched lengths is refused before TF's kernel sees it)."""
    fill = tf.raw_ops.SparseFillEmptyRows
    filled, ids, empty, _ = fill(indices=indices, values=ids, dense_shape=dense_shape,
                                 default_value=tf.constant(0, tf.int64))
    _, weights, _, _ = fill(indices=indices, values=weights, dense_shape=dense_shape,
                            default_value=tf.constant(1, weights.dtype))
    unique, idx = tf.unique(ids)
    rows = tf.gather(tf.gather(table, unique), idx)
    w = tf.reshape(weights, [-1, 1])
    segments = tf.cast(filled[:, 0], tf.int32)
    reduced = tf.math.segment_sum(rows * w, segments)
    if combiner == "mean":
        reduced = tf.math.divide_no_nan(reduced, tf.math.segment_sum(w, segments))
    if combiner == "sqrtn":  # Pow as TF's runtime runs it, in a graph (eager Pow rounds otherwise)
        squared = tf.function(lambda w: tf.pow(w, 2))(w)
        reduced = tf.math.divide_no_nan(reduced, tf.sqrt(tf.math.segment_sum(squared, segments)))
    return tf.where(tf.tile(tf.reshape(empty, [-1, 1]), [1, table.shape[1]]), tf.zeros_like(reduced), reduced)


def assert_same_floats(got, want):
    """The same bits, -0.0 included, but for NaNs, which need only be NaN in the same places: when
    an add meets two NaNs (a NaN weight and an inf - inf), which one it keeps is the compiler's
    choice of operand order (LLVM commutes fadd), and TF's own packet and scalar paths differ."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def _run(indices, ids, weights, shape, table, mode):
    err = new_error_buffer()
    out = weighted_bag(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64), weights,
                       np.array(shape, np.int64), table, mode, err)
    return out, (error_text(err) if err[0] else None)


@pytest.mark.parametrize("mode", [SUM, MEAN, SQRTN])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_matches_tf_chain(mode, dtype):
    rng = np.random.default_rng()
    # no subnormal results: TF's threads flush them, a direct call does not (the fused op runs on TF's)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.0], dtype)
    for rows in (0, 1, 5, 64):
        counts = rng.integers(0, 25, size=rows)  # 0..24 entries a row; one entry a row: SegmentSum's copy
        counts[rng.random(rows) < 0.2] = 0
        counts[rng.random(rows) < 0.2] = 1
        r = np.repeat(np.arange(rows), counts)
        order = rng.permutation(len(r)) if rng.random() < 0.5 else np.arange(len(r))  # unsorted too
        indices = np.stack([r, np.zeros_like(r)], 1)[order].astype(np.int64).reshape(-1, 2)
        table = rng.standard_normal((30, 7)).astype(dtype)
        table[rng.random(table.shape) < 0.1] = 0.0  # -0.0 products with negative weights
        ids = rng.integers(0, 30, size=len(r)).astype(np.int64)
        weights = rng.standard_normal(len(r)).astype(dtype)
        weights[rng.random(len(r)) < 0.1] = rng.choice(special)
        shape = np.array([rows, 1], np.int64)
        got, err = _run(indices, ids, weights, shape, table, mode)
        assert err is None, err
        assert_same_floats(got, tf_weighted_chain(indices, ids, weights, shape, table, COMBINERS[mode]).numpy())


@pytest.mark.parametrize("indices, ids, weights, shape", [
    ([[5, 0]], [1], [1.0], [3, 1]),                     # row outside the dense shape
    ([[0, 0]], [1], [1.0], [0, 1]),                     # entries but no rows
    ([[0, 0]], [99], [1.0], [3, 1]),                    # id outside the table
    ([[0, 0], [7, 0]], [99, 1], [1.0, 1.0], [3, 1]),    # both: the fill's row error comes first
    ([[0, 0], [1, 0]], [1, 2], [1.0], [3, 1]),          # fewer weights than entries
])
def test_kernel_bad_input_matches_tf_error(indices, ids, weights, shape):
    table = np.ones((10, 4), np.float32)
    weights = np.array(weights, np.float32)
    _, err = _run(indices, ids, weights, shape, table, MEAN)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_weighted_chain(np.array(indices, np.int64).reshape(-1, 2), np.array(ids, np.int64), weights,
                          np.array(shape, np.int64), tf.constant(table), "mean")
    assert err == error_core(theirs.value.message)


def test_an_empty_row_over_an_empty_table_is_the_gathers_error():
    _, err = _run([[1, 0]], [0], np.ones(1, np.float32), [2, 1], np.ones((0, 3), np.float32), SUM)
    assert err == "indices[0] = 0 is not in [0, 0)"


def _run_dense(strings, weights, table, num_buckets, mode):
    err = new_error_buffer()
    ids, offsets, data = pool(strings)
    out = dense_weighted_string_bag(ids, offsets, data, np.array(strings.shape, np.int64), weights, table,
                                    num_buckets, mode, err)
    return out, (error_text(err) if err[0] else None)


def tf_weighted_column(x, weights, table, num_buckets, combiner):
    """What a weighted column embeds from dense ids and weights: TF's own lookup, traced for
    unknown shapes (eager, it refuses ids and weights of different lengths before running). ``x``:
    strings hashed into ``num_buckets``, or identity ids (``num_buckets`` None; -1 absent, other
    negative ids pruned by TF)."""
    def column(x, weights):
        where = tf.where(tf.not_equal(x, b"" if num_buckets else tf.constant(-1, tf.int64)))
        ids = tf.gather_nd(x, where)
        ids = tf.strings.to_hash_bucket_fast(ids, num_buckets) if num_buckets else ids
        kept = tf.where(tf.not_equal(weights, 0))
        sp_ids = tf.SparseTensor(where, ids, tf.shape(x, out_type=tf.int64))
        sp_weights = tf.SparseTensor(kept, tf.gather_nd(weights, kept), tf.shape(weights, out_type=tf.int64))
        return tf.nn.safe_embedding_lookup_sparse(tf.constant(table), sp_ids, sp_weights, combiner=combiner)
    signature = [tf.TensorSpec([None, None], tf.string if num_buckets else tf.int64),
                 tf.TensorSpec([None, None], tf.float32)]
    return tf.function(column, input_signature=signature)(x, weights)


@pytest.mark.parametrize("mode", [SUM, MEAN, SQRTN])
def test_dense_kernel_matches_tf(mode):
    rng = np.random.default_rng()
    words = np.array([b"a", b"b", b"", "\u00e9".encode(), b"x" * 40], dtype=object)
    for rows, k in ((0, 3), (1, 1), (7, 4), (64, 3), (3, 20)):  # 20 ids a row: Eigen's 4 accumulators
        strings = words[rng.integers(0, 5, (rows, k))].astype(bytes) if rows else np.zeros((0, k), bytes)
        picks = np.array([0.5, 2.0, -1.0, 0.25, np.nan, np.inf, 3.0], np.float32)  # no zero: unpaired
        weights = np.where(strings != b"", rng.choice(picks, (rows, k)), 0).astype(np.float32)
        table = rng.standard_normal((13, 5)).astype(np.float32)
        got, err = _run_dense(strings, weights, table, 13, mode)
        assert err is None, err
        assert_same_floats(got, tf_weighted_column(strings, weights, table, 13, COMBINERS[mode]).numpy())


@pytest.mark.parametrize("strings, weights", [
    ([[b"a", b"b"], [b"", b"c"]], [[1, 0], [0, 0]]),      # 3 ids, 1 weight: the weights' gather
    ([[b"a", b""]], [[1, 2]]),                             # 1 id, 2 weights: the ids' gather
    ([[b"a", b"b"], [b"c", b""]], [[1, 2], [0, 0]]),      # 3 ids, 2 weights: LogicalAnd's shapes
])
def test_dense_kernel_unpaired_weights_are_tfs_error(strings, weights):
    strings, weights = np.array(strings, bytes), np.array(weights, np.float32)
    _, err = _run_dense(strings, weights, np.ones((8, 2), np.float32), 8, MEAN)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_weighted_column(strings, weights, np.ones((8, 2), np.float32), 8, "mean")
    assert err is not None and err == error_core(theirs.value.message)


@pytest.mark.parametrize("strings, weights", [([[b"a", b""]], [[0, 0]]), ([[b"", b""]], [[0, 5]])])
def test_dense_kernel_one_against_none_broadcasts_as_tf(strings, weights):
    # LogicalAnd broadcasts a length of 1: one id and no weight drops the id, no id and one weight is nothing
    strings, weights = np.array(strings, bytes), np.array(weights, np.float32)
    table = -np.ones((8, 2), np.float32)  # a kept id would show, even weighed by a 0 (-0.0)
    got, err = _run_dense(strings, weights, table, 8, SUM)
    assert err is None
    assert_same_floats(got, tf_weighted_column(strings, weights, table, 8, "sum").numpy())


@pytest.mark.parametrize("x, weights", [
    ([[3, -3], [5, -1]], [[1, 2], [3, 0]]),     # a negative id is dropped with its weight
    ([[3, -3], [-1, -1]], [[1, 0], [0, 0]]),    # one weight, the only kept id first: paired
    ([[3, -3], [-1, 2]], [[1, 0], [0, 0]]),     # one weight, a second kept id: the weights' gather at [1]
    ([[-3, 3], [-1, 2]], [[1, 0], [0, 0]]),     # one weight, a kept id past it: the weights' gather at [0]
    ([[-3, -1]], [[1, 2]]),                      # one dropped id, two weights: nothing
    ([[3, -1]], [[1, 2]]),                       # one kept id, two weights: the ids' gather
    ([[3, 4], [5, -1]], [[1, 2], [0, 0]]),     # 3 ids, 2 weights: LogicalAnd's shapes
    ([[3, 4], [5, 6]], [[1, -2], [0.5, 3]]),  # paired; for the mean, a weight < 0 dropped with its id
])
@pytest.mark.parametrize("mode", [SUM, MEAN, SQRTN])
def test_dense_int_kernel_pairs_weights_as_tf(x, weights, mode):
    x, weights = np.array(x, np.int64), np.array(weights, np.float32)
    table = np.arange(16, dtype=np.float32).reshape(8, 2) - 5
    err = new_error_buffer()
    one = np.array([-1], np.int64)
    got = dense_weighted_int_bag(x, np.array(x.shape, np.int64), weights, table, one, IDENTITY, one, one, one, one,
                                 0, mode, err)
    same_as_tf(got, error_text(err) if err[0] else None,
               lambda: tf_weighted_column(x, weights, table, None, COMBINERS[mode]))


# The model's weighted columns: (ids column, their dtype, combiner), ids s<i> weighted by w<i>
COLUMNS = [
    (lambda name: FC.categorical_column_with_hash_bucket(name, 40), tf.string, "mean"),
    (lambda name: FC.categorical_column_with_identity(name, 40), tf.int64, "sum"),
    (lambda name: FC.categorical_column_with_hash_bucket(name, 40), tf.string, "sum"),
    (lambda name: FC.categorical_column_with_vocabulary_list(name, [3, 5, 7, -5], dtype=tf.int32), tf.int32, "mean"),
    (lambda name: FC.categorical_column_with_vocabulary_list(name, ["a", "b", "\u00e9"], num_oov_buckets=2), tf.string,
     "sum"),
    (lambda name: FC.categorical_column_with_vocabulary_list(name, ["a", "b"]), tf.string, "mean"),  # unknown: -1
    (lambda name: FC.categorical_column_with_hash_bucket(name, 30, dtype=tf.int64), tf.int64, "mean"),
    (lambda name: FC.categorical_column_with_hash_bucket(name, 40), tf.string, "sqrtn"),
    (lambda name: FC.categorical_column_with_identity(name, 40), tf.int64, "sqrtn"),
]


def _weighted_model(combiners=None):
    import tf_keras
    columns, specs = [], {}
    for i, (ids, dtype, combiner) in enumerate(COLUMNS):
        columns.append(FC.embedding_column(FC.weighted_categorical_column(ids(f"s{i}"), f"w{i}"), 3,
                                           combiner=combiners[i] if combiners else combiner))
        specs[f"s{i}"], specs[f"w{i}"] = tf.TensorSpec([None, 4], dtype), tf.TensorSpec([None, 4], tf.float32)
        if combiners and i + 1 == len(combiners):
            break
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures(columns)
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module


def _fused_ops(module):
    """The ops of the module's clusters once rewritten."""
    ops = []
    for spec in fused_specs(module, signature="serve"):
        for rewrite in SPEC_REWRITES:
            spec, _ = rewrite(spec)
        ops += [node["op"] for node in spec["nodes"]]
    return ops


def test_weighted_columns_become_one_op_each():
    ops = _fused_ops(_weighted_model())
    # hashed strings (mean, sum and sqrtn), vocabulary strings (with OOV buckets, and unknown words
    # dropped), identity ids (sum and sqrtn), an int32 vocabulary and hashed ints whole
    assert [ops.count(op) for op in ("_BladeWeightedStringBag", "_BladeWeightedVocabularyBag",
                                     "_BladeWeightedIntBag")] == [3, 2, 4], ops
    assert not {"SparseFillEmptyRows", "Unique", "ResourceGather", "SegmentSum", "DivNoNan", "Select", "LogicalAnd",
                "Pow", "Sqrt", "_BladeWeightedBag", "_BladeTableFind"} & set(ops), ops


@pytest.fixture(scope="module")
def weighted_model():
    module = _weighted_model()
    return module, tf_blade.optimize(module).signatures["serve"]


def _batch(rng, n, moved=False):
    words = np.array([b"a", b"b", b"", b"longer than twenty-two bytes", "\u00e9".encode()], dtype=object)
    x = {}
    for i, (_, dtype, _) in enumerate(COLUMNS):  # s4, s5: unknown words too; -1: no id
        x[f"s{i}"] = ((words[rng.integers(0, 5, (n, 4))].astype(bytes) if n else np.zeros((0, 4), bytes))
                      if dtype == tf.string else rng.integers(-1, 40, (n, 4)))
    x["s3"] = rng.choice(np.array([-1, 3, 5, 7, -5, 9, -2], np.int32), (n, 4))  # 9, -2: not in the vocabulary
    for i in range(len(COLUMNS)):
        # a weight for every id (and none elsewhere), some of them <= 0 (dropped by the mean), NaN or inf
        present = x[f"s{i}"] != (b"" if x[f"s{i}"].dtype.kind == "S" else -1)
        weights = rng.choice(np.array([0.5, 2.0, -1.0, 0.25, np.nan, np.inf, 3.0], np.float32), (n, 4))
        x[f"w{i}"] = np.where(present, weights, 0.0).astype(np.float32)
        if moved and present.any() and not present.all():  # the same count elsewhere: paired in order all the same
            x[f"w{i}"][np.nonzero(present)[0][0], np.nonzero(present)[1][0]] = 0.0
            x[f"w{i}"][np.nonzero(~present)[0][-1], np.nonzero(~present)[1][-1]] = 1.5
    return {k: tf.constant(v) for k, v in x.items()}


@pytest.mark.parametrize("n, moved", [(0, False), (1, False), (64, False), (64, True)])
def test_weighted_columns_match_tensorflow(weighted_model, rng, n, moved):
    module, fused = weighted_model
    x = _batch(rng, n, moved)
    assert_same_floats(fused(**{"x_" + k: v for k, v in x.items()}).numpy(), module.serve(x).numpy())


def test_weights_that_do_not_pair_with_the_ids_are_tfs_error(weighted_model, rng):
    module, fused = weighted_model
    x = {k: v.numpy() for k, v in _batch(rng, 16).items()}
    x["w0"][x["w0"] != 0] = np.concatenate([[0], x["w0"][x["w0"] != 0][1:]])  # one id unweighted
    x = {k: tf.constant(v) for k, v in x.items()}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        module.serve(x)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        fused(**{"x_" + k: v for k, v in x.items()})
    assert "Incompatible shapes" in error_core(ours.value.message)
    assert error_core(ours.value.message) == error_core(theirs.value.message)

"""RaggedTensorToTensor (kernels/ragged_to_tensor.py) against TF: random ragged rows as splits and as
row ids, both index dtypes, every kind of requested shape (cut, padded, found), empty rows and
batches, and TF's answers and messages on broken partitions (fuzzed); then fused, where a split
tags field padded to k columns is hashed in the same op (`rt.to_tensor("", shape=[None, k])`)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import assert_matches_tf, check_one_op_on_tags_fields, op_counts, run_kernel, run_tf
from tf_blade.kernels.ragged_to_tensor import ragged_to_tensor
from tf_blade.runtime.bridge import native_bridge

SPLITS, ROWIDS = ["ROW_SPLITS"], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]
SHAPES = [-1, [-1, -1], [-1, 2], [3, -1], [2, 4], [0, -1], [-1, 0]]


def _run(shape, values, default, partitions, types, index_dtype=np.int64):
    """(result, None) or (None, message) of the kernel, given the op's inputs as TF takes them."""
    partitions = [np.asarray(p, index_dtype) for p in partitions]
    values = np.asarray(values)
    requested = np.full(values.ndim + 1, -1, np.int64) if np.ndim(shape) == 0 else np.array(shape, np.int64)
    first_dim_size = partitions[0].reshape(1) if types == ROWIDS else np.zeros(0, index_dtype)
    return run_kernel(ragged_to_tensor, partitions[-1], first_dim_size, requested, values,
                      np.asarray(default, values.dtype).reshape(1))


def _compare(shape, values, default, partitions, types, index_dtype=np.int64):
    """The kernel's result or message against TF's, on one input."""
    values = np.asarray(values)
    want, tf_error = run_tf("RaggedTensorToTensor", shape=tf.constant(shape, tf.int64), values=tf.constant(values),
                            default_value=tf.constant(np.asarray(default, values.dtype)), row_partition_types=types,
                            row_partition_tensors=[tf.constant(np.asarray(p, index_dtype)) for p in partitions])
    got, error = _run(shape, values, default, partitions, types, index_dtype)
    assert_matches_tf(got, error, want, tf_error, same_message=True)


def _random_rows(rng, n_rows):
    lengths = rng.integers(0, 6, n_rows) * (rng.random(n_rows) < 0.8)  # ~20% empty rows
    return lengths, np.concatenate([[0], np.cumsum(lengths)])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_rows", [0, 1, 5, 200])
def test_valid_rows_match_tf(rng, index_dtype, shape, n_rows):
    lengths, splits = _random_rows(rng, n_rows)
    values = rng.normal(size=splits[-1]).astype(np.float32)
    _compare(shape, values, -1.5, [splits], SPLITS, index_dtype)
    rowids = np.repeat(np.arange(n_rows), lengths)
    _compare(shape, values, np.nan, [n_rows, rowids], ROWIDS, index_dtype)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64, np.bool_, np.uint8])
def test_value_dtypes(rng, dtype):
    _, splits = _random_rows(rng, 30)
    values = rng.integers(0, 2 if dtype == np.bool_ else 100, splits[-1]).astype(dtype)
    _compare([-1, 3], values, 1, [splits], SPLITS)


@pytest.mark.parametrize("shape,values,partitions,types", [
    ([-1, -1], [1, 2, 3], [[]], SPLITS),                 # Invalid first partition input
    ([-1, -1], [1, 2, 3], [[0, 2, 1, 3]], SPLITS),       # Invalid row split size.
    ([-1, -1], [1, 2, 3], [[0, -2, 3]], SPLITS),
    ([5, 2], [1, 2, 3], [[1, 2, 3]], SPLITS),            # splits[0] is not checked, the total is
    ([-1, -1], [1, 2, 3], [[2, 0, 2]], SPLITS),          # a negative row, and TF answers
    ([-1, -1], [1, 2, 3, 4], [[0, 2, 3]], SPLITS),       # more values than the splits cover
    ([0, -1], [1, 2, 3], [[5, 2, 3]], SPLITS),           # an empty output checks nothing
    ([-1, -1], np.zeros(0, np.int64), [[0, 0, 0]], SPLITS),
    ([2 ** 40, 2 ** 40], [1, 2, 3], [[0, 2, 3]], SPLITS),  # more than 2**63 - 1 elements
    ([-1, -1], [1, 2, 3], [-3, [0, 0, 1]], ROWIDS),      # Dimension -3 must be >= 0
    ([-1, -1], [1, 2, 3], [2, [0, 2, 1]], ROWIDS),       # Got next_value_rowid=2 ...
    ([-1, -1], [1, 2, 3], [2, [2, 0, 0]], ROWIDS),       # Got current_value_rowid=2 ...
    ([-1, -1], [1, 2, 3], [2, [-1, 0, 0]], ROWIDS),      # negative ids fail TF's unsigned test
    ([-1, -1], [1, 2, 3], [2, [0, -1, 0]], ROWIDS),
    ([-1, -1], [1, 2, 3], [2, []], ROWIDS),
    ([-1, -1], [1, 2, 3], [0, [0, 0, 0]], ROWIDS),
    ([-1, -1], [1, 2, 3], [3, [1, 1, 2]], ROWIDS),
    ([-1, -1], [1, 2, 3, 4], [3, [1, 0]], ROWIDS),       # out of order, but inside the output: TF's cells
    ([3, -1], [1, 2], [2, [1, 0]], ROWIDS),              # the same, moved into a padding row
    ([1, -1], [1], [[0, 1, 3]], SPLITS),                 # fewer values than the splits cover, but
    ([-1, 1], [1], [[0, 3]], SPLITS),                    # those missing are cut off: TF never reads them
    ([1, -1], [1, 2], [2, [0, 0, 1, 1, 1]], ROWIDS),
    ([-1, 4], [1, 2, 3], [2 ** 40, [0, 0, 1]], ROWIDS),  # OOM when allocating (a ResourceExhaustedError)
])
def test_edge_cases_match_tf(shape, values, partitions, types):
    _compare(shape, values, 0, partitions, types)


@pytest.mark.parametrize("shape,partitions,types,message", [
    ([-1, -1], [[0, 2, 5]], SPLITS, "value 3 has a cell but there are only 3 values"),
    ([-1, -1], [2, [0, 0, 1, 1, 1]], ROWIDS, "value 3 has a cell but there are only 3 values"),
    ([-1, 1], [2, [0, 0, 0, 1, 1]], ROWIDS, "value 3 has a cell but there are only 3 values"),  # TF: [[1], [65]]
    ([-1, -1], [3, [1, 0, 1]], ROWIDS, "out of order"),
    ([-1, -1], [2, [1, 1, 0]], ROWIDS, "out of order"),
    ([5, -1], [-1, [0]], ROWIDS, "tf_blade: a row count of -1"),  # TF sizes a vector by it and aborts
    ([-1, -1], [[4, 7, -1]], SPLITS, "Invalid row split size."),  # TF aborts (it reserves -1 places)
])
def test_where_tf_reads_or_writes_past_an_end_we_raise(shape, partitions, types, message):
    """TF's kernel reads garbage past the values (it printed 22037 for the first case), writes
    past its output (heap corruption, then an abort) or aborts; these inputs are never given to it."""
    got, error = _run(shape, [1, 2, 3], 0, partitions, types)
    assert got is None and message in error


@pytest.mark.parametrize("shape", [[0, -1], [-1, -1], [1, 2]])
def test_int32_row_lengths_wrap_as_tfs(shape):
    """TF computes row lengths in the splits' type: 2**31 - 1 - -2**31 is -1 in int32."""
    _compare(shape, [1, 2, 3], 0, [[-2 ** 31, 2 ** 31 - 1]], SPLITS, np.int32)


def test_fuzzed_partitions_match_tf(rng):
    """Random, mostly broken partitions: TF's answer or message wherever TF stays inside its
    buffers (the kernel's own tf_blade errors mark the inputs where it does not)."""
    checked = 0
    for _ in range(400):
        n = int(rng.integers(0, 6))
        values = rng.integers(-9, 9, int(rng.integers(0, 8)))
        shape = SHAPES[rng.integers(len(SHAPES))]
        if rng.random() < 0.5:
            partitions, types = [np.sort(rng.integers(-1, 8, n)) if rng.random() < 0.7 else rng.integers(-1, 8, n)], SPLITS
        else:
            rowids = rng.integers(-1, 4, n)
            partitions, types = [int(rng.integers(-2 if np.ndim(shape) == 0 or shape[0] == -1 else 0, 5)),
                                 np.sort(rowids) if rng.random() < 0.7 else rowids], ROWIDS
        _, error = _run(shape, values, 0, partitions, types)
        if error and error.startswith("tf_blade:") or types == SPLITS and n and partitions[0][-1] < 0:
            continue  # TF sizes a vector by the last split: a negative one aborts it
        _compare(shape, values, 0, partitions, types)
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("shape", [-1, "found", "cut", "padded", "inner given", "inner wrong"])
@pytest.mark.parametrize("inner", [(3,), (3, 2), (0,)])
def test_values_of_higher_rank(rng, shape, inner):
    """Each value a block (a history's embedding vectors): TF's layout, and its message when the
    requested inner dims are not the values'."""
    shape = {"found": [-1, -1, *[-1] * len(inner)], "cut": [2, 1, *[-1] * len(inner)],
             "padded": [8, 9, *[-1] * len(inner)], "inner given": [-1, -1, *inner],
             "inner wrong": [-1, -1, *inner[:-1], inner[-1] + 1]}.get(shape, shape)
    lengths, splits = _random_rows(rng, 6)
    values = rng.integers(-9, 9, (splits[-1],) + inner).astype(np.float32)
    _compare(shape, values, 0.5, [splits], SPLITS)
    _compare(shape, values, 0.5, [6, np.repeat(np.arange(6), lengths)], ROWIDS)


def _tags(rng, n):
    return tf.constant(["|".join(f"t{v}" for v in rng.zipf(1.3, rng.integers(0, 7))) for _ in range(n)], tf.string)


@pytest.mark.parametrize("default", ["", "<pad>"])
def test_padded_tags_hash_in_one_op(rng, default):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def padded(s):
        dense = tf.strings.split(s, "|").to_tensor(default, shape=[None, 4])
        return tf.strings.to_hash_bucket_fast(dense, 1000)

    check_one_op_on_tags_fields(padded, rng, batches=(0, 1, 100))


def _same_without_fallback(fused, f, *inputs):
    """``fused`` gives ``f``'s results on ``inputs`` (flattened) and did not fall back to TF (the
    first-run check would hide a wrong first answer)."""
    fallbacks = native_bridge().fallback_count()
    np.testing.assert_array_equal(fused(*tf.nest.flatten(inputs, expand_composites=True)).numpy(), f(*inputs).numpy())
    assert native_bridge().fallback_count() == fallbacks


def test_padded_tokens_of_strings_made_in_the_op_stay_valid(rng):
    """AsString's buffer is freed after its last use unless the views' owner holds it: hash
    after to_tensor after split, with allocations in between, 20 calls."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def padded(x):
        text = tf.strings.as_string(x * 1234567)
        dense = tf.strings.split(text, "3").to_tensor("z", shape=[None, 3])
        return tf.strings.to_hash_bucket_fast(dense, 1 << 20) + tf.cast(tf.shape(tf.strings.as_string(x)), tf.int64)[0]

    fused = tf_blade.optimize(padded).signatures["serving_default"]
    assert "RaggedTensorToTensor" not in op_counts(fused), op_counts(fused)
    for _ in range(20):
        _same_without_fallback(fused, padded, tf.constant(rng.integers(0, 10 ** 9, 300)))


def test_ragged_ids_to_tensor_fused_and_its_errors(rng):
    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int64)])
    def dense(r):
        return r.to_tensor(7, shape=[None, 3]) * 2

    fused = tf_blade.optimize(dense, min_cluster_size=1).signatures["serving_default"]
    assert "RaggedTensorToTensor" not in op_counts(fused), op_counts(fused)
    for n in (0, 1, 60):
        r = tf.ragged.constant([list(rng.integers(-9, 9, rng.integers(0, 6))) for _ in range(n)], tf.int64,
                               ragged_rank=1) if n else tf.RaggedTensor.from_row_splits(tf.zeros(0, tf.int64), [0])
        _same_without_fallback(fused, dense, r)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid row split size"):
        fused(tf.constant([1, 2, 3], tf.int64), tf.constant([0, 2, 1, 3], tf.int64))


def test_forms_not_lowered_stay_in_tf(rng):
    """Two ragged dimensions, a string default computed in the graph, and a dim past int32 with
    int32 splits (TF truncates it: 2**32 + 2 rows become 2) stay TF ops; the rest of the function
    still fuses around them and the results are TF's."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def nested(s):
        words = tf.strings.split(tf.strings.split(s, "|"), "-")  # two ragged dimensions
        pad = tf.strings.substr(s[0], 0, 1)  # a default read from the input
        lengths = tf.strings.length(s)
        truncated = tf.raw_ops.RaggedTensorToTensor(
            shape=tf.constant([2 ** 32 + 2, -1], tf.int64), values=lengths * 3, default_value=tf.constant(0),
            row_partition_tensors=[tf.constant([0, 1, 3], tf.int32)], row_partition_types=["ROW_SPLITS"])
        return (tf.strings.to_hash_bucket_fast(words.to_tensor("", shape=[None, 3, 2]), 100),
                tf.strings.to_hash_bucket_fast(tf.strings.split(s, "|").to_tensor(pad, shape=[None, 2]), 100),
                truncated + 1)

    fused = tf_blade.optimize(nested, min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["RaggedTensorToTensor"] == 3, op_counts(fused)
    s = tf.constant(["a-b|c", "", "d|e-f-g|h|i"])
    for got, want in zip(fused(s=s), nested(s)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_padded_history_embeddings_fused(rng):
    table = tf.constant(rng.standard_normal((50, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int64)])
    def history(ids):
        vectors = tf.ragged.map_flat_values(tf.gather, table, ids)
        return vectors.to_tensor(shape=[None, 3, None]) * 2.0

    fused = tf_blade.optimize(history, min_cluster_size=1).signatures["serving_default"]
    assert "RaggedTensorToTensor" not in op_counts(fused), op_counts(fused)
    for n in (1, 40):
        r = tf.ragged.constant([list(rng.integers(0, 50, rng.integers(0, 6))) for _ in range(n)], tf.int64, ragged_rank=1)
        _same_without_fallback(fused, history, r)

"""DenseBincount (kernels/bincount.py, lowerings/bincount.py) fused and run against TF's own
kernel on the same inputs: counts, weights, binary output, vector and matrix inputs, values past
size, and TF's errors (weights of another shape, negative size, negative values)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import check_one_op_on_tags_fields, error_core, op_counts

CASES = {  # name: (data spec, weights spec, binary_output)
    "rows_weighted": (tf.TensorSpec([None, None], tf.int64), tf.TensorSpec([None, None], tf.float32), False),
    "rows_binary": (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.float64), True),
    "vector_counts": (tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.int64), False),
    "vector_weighted": (tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32), False),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    data_spec, weights_spec, binary = CASES[request.param]

    @tf.function(input_signature=[data_spec, tf.TensorSpec([], data_spec.dtype), weights_spec])
    def bincount(data, size, weights):
        return {"out": tf.raw_ops.DenseBincount(input=data + 0, size=size, weights=weights, binary_output=binary)}
    fused = tf_blade.optimize(bincount, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1 and "DenseBincount" not in op_counts(fused)
    return request.param, bincount, fused


def _same(case, data, size, weights):
    name, bincount, fused = case
    data_spec, weights_spec, _ = CASES[name]
    args = (tf.constant(data, data_spec.dtype), tf.constant(size, data_spec.dtype), tf.constant(weights, weights_spec.dtype))
    try:
        want = bincount(*args)["out"].numpy()
    except tf.errors.InvalidArgumentError as e:
        with pytest.raises(tf.errors.InvalidArgumentError) as got:
            fused(*args)
        assert error_core(got.value.message) == error_core(e.message)
        return "error"
    got = fused(*args)["out"].numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return "ok"


def test_matches_tf_on_random_inputs(case, rng):
    name = case[0]
    data_spec, weights_spec, _ = CASES[name]
    for rows in (0, 1, 17):
        shape = {2: (rows, 5), 1: (rows * 3,)}[data_spec.shape.rank]
        data = rng.integers(0, 12, shape)
        size = int(rng.integers(0, 10))  # some values land past size: ignored
        empty = np.zeros((0,) * weights_spec.shape.rank)  # counts ones
        assert _same(case, data, size, empty) == "ok"
        if weights_spec.shape.rank == data_spec.shape.rank:
            assert _same(case, data, size, np.round(rng.standard_normal(shape) * 8, 1)) == "ok"


def test_tf_errors(case):
    name = case[0]
    rank = CASES[name][0].shape.rank
    empty = np.zeros((0,) * CASES[name][1].shape.rank)
    data = {2: [[1, 2, 3]], 1: [1, 2, 3]}[rank]
    assert _same(case, data, -1, empty) == "error"                          # negative size
    negative = {2: [[1, -4, 3]], 1: [1, -4, 3]}[rank]
    assert _same(case, negative, 5, empty) == "error"                       # a negative value
    wrong = np.ones({2: (1, 2), 1: (2,)}[CASES[name][1].shape.rank])
    assert _same(case, data, -1, wrong) == "error"  # weights of another shape: checked first


def test_negative_values_of_a_matrix_follow_tfs_32_bit_rule(case):
    """TF's matrix kernel keeps the last negative value in an int and raises when that is
    negative, naming it; an int64 whose low 32 bits are not negative is skipped, not an error."""
    name = case[0]
    data_spec, weights_spec, _ = CASES[name]
    if data_spec.shape.rank != 2:
        pytest.skip("a vector raises on any negative value (test_tf_errors)")
    empty = np.zeros((0,) * weights_spec.shape.rank)
    assert _same(case, [[-1, 2, -2], [3, 1, 1]], 5, empty) == "error"  # names -2, the last
    assert _same(case, [[-3, 1], [2, -2**31]], 5, empty) == "error"
    if data_spec.dtype == tf.int64:
        for kept in ([[1, -2**63, 2]], [[-1, 2], [1, -2**32]], [[-2**32 + 5, 1], [4, 4]]):
            assert _same(case, kept, 5, empty) == "ok"
        assert _same(case, [[-2**32 - 1, 2]], 5, empty) == "error"  # low 32 bits: -1


RAGGED_CASES = {  # name: (values dtype, weights dtype, binary_output)
    "ragged_counts": (tf.int64, tf.float32, False),
    "ragged_binary": (tf.int32, tf.int64, True),
    "ragged_weighted": (tf.int64, tf.float64, False),
}


@pytest.fixture(scope="module", params=sorted(RAGGED_CASES))
def ragged_case(request):
    values_dtype, weights_dtype, binary = RAGGED_CASES[request.param]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], values_dtype),
                                  tf.TensorSpec([], tf.int64), tf.TensorSpec([None], weights_dtype)])
    def bincount(splits, values, size, weights):
        return {"out": tf.raw_ops.RaggedBincount(splits=splits + 0, values=values, size=tf.cast(size, values_dtype),
                                                 weights=weights, binary_output=binary)}
    fused = tf_blade.optimize(bincount, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert op_counts(fused)["BladeFusedCall"] == 1 and "RaggedBincount" not in op_counts(fused)
    return request.param, bincount, fused


def _same_ragged(case, splits, values, size, weights):
    name, bincount, fused = case
    values_dtype, weights_dtype, _ = RAGGED_CASES[name]
    args = (tf.constant(splits, tf.int64), tf.constant(values, values_dtype), tf.constant(size, tf.int64),
            tf.constant(weights, weights_dtype))
    try:
        want = bincount(*args)["out"].numpy()
    except tf.errors.InvalidArgumentError as e:
        with pytest.raises(tf.errors.InvalidArgumentError) as got:
            fused(*args)
        assert error_core(got.value.message) == error_core(e.message)
        return
    np.testing.assert_array_equal(fused(*args)["out"].numpy(), want)


def test_ragged_matches_tf_on_random_inputs(ragged_case, rng):
    for rows in (0, 1, 9, 200):
        lengths = rng.integers(0, 6, rows) * (rng.random(rows) < 0.85)
        splits = np.concatenate([[0], np.cumsum(lengths)])
        values = rng.integers(0, 40, int(splits[-1]))  # some past size: ignored
        for weights in (rng.integers(1, 9, values.shape[0]) / 4, []):
            _same_ragged(ragged_case, splits, values, 30, weights)
    _same_ragged(ragged_case, [0, 3, 2, 3], [1, 1, 2], 4, [])  # splits not monotonic: TF's rows, no error


@pytest.mark.parametrize("splits,values,size", [([0, 2, 3], [1, -1, 2], 4), ([0, 2, 3], [1, 1, 2], -1),
                                                ([], [1], 4), ([1, 3], [1, 1, 2], 4), ([0, 2], [1, 1, 2], 4)])
def test_ragged_tf_errors(ragged_case, splits, values, size):
    _same_ragged(ragged_case, splits, values, size, [])


def test_ragged_weights_of_another_length(ragged_case):
    name, bincount, fused = ragged_case
    values_dtype, weights_dtype, binary = RAGGED_CASES[name]
    splits, values = [0, 1, 3], [1, 2, 2]
    _same_ragged(ragged_case, splits, values, 4, [1, 2, 3, 4])  # longer: TF reads the first ones
    _same_ragged(ragged_case, [0], [], 4, [1, 2])
    shorter = (tf.constant(splits, tf.int64), tf.constant(values, values_dtype), tf.constant(4, tf.int64),
               tf.constant([5], weights_dtype))
    if binary:  # TF never reads them
        np.testing.assert_array_equal(fused(*shorter)["out"].numpy(), bincount(*shorter)["out"].numpy())
    else:  # TF reads past their end
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least one value per input value"):
            fused(*shorter)


def test_string_lookup_multi_hot_of_a_split_field_is_one_op(rng):
    import tf_keras
    lookup = tf_keras.layers.StringLookup(vocabulary=[f"t{i}" for i in range(1, 50)], output_mode="multi_hot")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def multi_hot(s):
        return lookup(tf.strings.split(s, "|"))

    check_one_op_on_tags_fields(multi_hot, rng)

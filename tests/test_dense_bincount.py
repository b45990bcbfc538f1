"""DenseBincount (kernels/bincount.py, lowerings/bincount.py) fused and run against TF's own
kernel on the same inputs: counts, weights, binary output, vector and matrix inputs, values past
size, and TF's errors (weights of another shape, negative size, negative values)."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import op_counts

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
        ours = got.value.message.split("\n")[0]
        assert ours in e.message, (ours, e.message)
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

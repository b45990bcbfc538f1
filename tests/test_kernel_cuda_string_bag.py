"""kernels/cuda_string_bag.py against TF's own hash-bucket embedding column chain per column (""
dropped, StringToHashBucketFast, SparseSegment*), bit for bit, and TF's gather message when a
table is smaller than its buckets. Runs on a GPU where there is one, else in Numba's CUDA
simulator (conftest.py)."""
import numpy as np
import pytest
import tensorflow as tf
from numba import cuda

from test_embedding_bag import COMBINERS
from test_string_bag import POOL, _run, tf_string_chain
from tf_blade.kernels.cuda_embedding_bag import StackedTables
from tf_blade.kernels.cuda_string_bag import pack_strings, string_bags


def _columns(rng, batch, dtype, width):
    """(strings [batch, k], table, buckets) per column: k up to 20 (blocks of 8 and the >= 10
    scaling), ~20% empty rows, "" padding, non-ASCII and long strings."""
    columns = []
    for k, buckets in ((3, 7), (20, 40), (1, 1)):
        strings = rng.choice(np.array(POOL, object), size=(batch, k))
        strings[rng.random(batch) < 0.2] = b""
        table = (rng.standard_normal((buckets + int(rng.integers(0, 3)), width)) * 10).astype(dtype)
        columns.append((strings, table, buckets))
    return columns


def _launch(columns, mode, batch):
    data, offsets, starts, slots = pack_strings([s for s, _, _ in columns])
    buckets = np.array([b for _, _, b in columns], np.int64)
    out, error = string_bags(StackedTables([t for _, t, _ in columns]), cuda.to_device(data), cuda.to_device(offsets),
                             cuda.to_device(starts), cuda.to_device(slots), cuda.to_device(buckets), mode, batch)
    return (out.copy_to_host() if out is not None else None), error


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 6])
def test_matches_tf_bit_for_bit(rng, mode, dtype, width):
    batch = 11
    columns = _columns(rng, batch, dtype, width)
    got, error = _launch(columns, mode, batch)
    assert error is None
    want = np.concatenate([tf_string_chain(s, None, t, b, COMBINERS[mode]) for s, t, b in columns], axis=1)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def test_empty_batch(rng):
    got, error = _launch(_columns(rng, 0, np.float32, 4), 1, 0)
    assert error is None and got.shape == (0, 12)


def test_buckets_past_the_table_get_the_cpu_kernels_message(rng):
    """TF rejects it too; its index counts Unique's ids after SparseFillEmptyRows' fills, ours
    (the CPU kernel's) the column's non-empty strings."""
    columns = _columns(rng, 6, np.float32, 4)
    strings = columns[1][0]
    strings[0, :] = b""  # the first row empty: the message counts non-empty strings only
    strings[1, :3] = [b"", b"a", b"id_7"]
    columns[1] = (strings, np.ones((3, 4), np.float32), 2**40)
    _, error = _launch(columns, 1, 6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not in \\[0, 3\\)"):
        tf_string_chain(strings, None, columns[1][1], 2**40, "mean")
    assert error == _run(strings, None, columns[1][1], 2**40, 1)[1] == "indices[0] = 436859794915 is not in [0, 3)"


def test_columns_must_hold_batch_rows(rng):
    columns = _columns(rng, 4, np.float32, 2)
    data, offsets, starts, slots = pack_strings([s for s, _, _ in columns])
    slots[1] += 1  # column 1 claims more strings than it has
    with pytest.raises(ValueError, match="every column must hold"):
        string_bags(StackedTables([t for _, t, _ in columns]), cuda.to_device(data), cuda.to_device(offsets),
                    cuda.to_device(starts), cuda.to_device(slots),
                    cuda.to_device(np.array([b for _, _, b in columns], np.int64)), 1, 4)

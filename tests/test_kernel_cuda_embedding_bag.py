"""kernels/cuda_embedding_bag.py against TF's own SparseSegment{Sum,Mean,SqrtN}WithNumSegments per
column, bit for bit (the kernel adds in TF's order), and the gather's message for a bad id. Runs
on a GPU where there is one, else in Numba's CUDA simulator (conftest.py)."""
import numpy as np
import pytest
import tensorflow as tf
from numba import cuda

from tf_blade.kernels.cuda_embedding_bag import embedding_bags, StackedTables

TF_REDUCE = ["SparseSegmentSumWithNumSegments", "SparseSegmentMeanWithNumSegments",
             "SparseSegmentSqrtNWithNumSegments"]


def _columns(rng, batch, dtype, rows=(7, 50, 1), width=5):
    """Per column (table, ids, counts per row): 0..20 ids a row, so blocks of 8 and the >= 10
    scaling both occur; repeated ids; tables with NaN, inf and -0.0."""
    columns = []
    for n in rows:
        table = (rng.standard_normal((n, width)) * 10).astype(dtype)
        if n > 1:
            table[0, :3] = [np.nan, np.inf, -0.0][:width]
        counts = rng.choice([0, 1, 2, 3, 9, 10, 17, 20], batch)
        ids = rng.integers(0, n, int(counts.sum()))
        columns.append((table, ids, counts))
    return columns


def _launch(columns, mode, batch):
    ids = np.concatenate([i for _, i, _ in columns]).astype(np.int64)
    splits, at = [], 0
    for _, i, counts in columns:
        splits.append(at + np.concatenate([[0], np.cumsum(counts)]))
        at += len(i)
    out, error = embedding_bags(StackedTables([t for t, _, _ in columns]), cuda.to_device(ids),
                                cuda.to_device(np.array(splits, np.int64)), mode, batch)
    return (out.copy_to_host() if out is not None else None), error


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 5, 16])  # a thread makes up to 4 elements of a row
def test_matches_tf_bit_for_bit(rng, mode, dtype, width):
    batch = 9
    columns = _columns(rng, batch, dtype, width=width)
    got, error = _launch(columns, mode, batch)
    assert error is None
    want = np.concatenate([getattr(tf.raw_ops, TF_REDUCE[mode])(
        data=table, indices=ids, segment_ids=np.repeat(np.arange(batch), counts), num_segments=batch).numpy()
        for table, ids, counts in columns], axis=1)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def test_empty_batch(rng):
    got, error = _launch(_columns(rng, 0, np.float32), 1, 0)
    assert error is None and got.shape == (0, 15)


@pytest.mark.parametrize("bad", [-1, 50, 2**62])
def test_bad_id_gets_the_gathers_message(rng, bad):
    columns = _columns(rng, 6, np.float32)
    table, ids, counts = columns[1]
    if len(ids) == 0:
        counts[0], ids = 1, np.array([0])
        columns[1] = (table, ids, counts)
    ids[len(ids) // 2] = bad
    got, error = _launch(columns, 1, 6)
    assert got is None and error == f"indices[{len(ids) // 2}] = {bad} is not in [0, 50)"


def test_tables_must_share_width():
    with pytest.raises(ValueError, match="share width"):
        StackedTables([np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)])


def test_the_error_flag_is_reset_for_the_next_call(rng):
    table = rng.standard_normal((4, 3)).astype(np.float32)
    stacked = StackedTables([table])
    splits = cuda.to_device(np.array([[0, 2]], np.int64))
    _, error = embedding_bags(stacked, cuda.to_device(np.array([1, 9], np.int64)), splits, 0, 1)
    assert error == "indices[1] = 9 is not in [0, 4)"
    out, error = embedding_bags(stacked, cuda.to_device(np.array([1, 3], np.int64)), splits, 0, 1)
    assert error is None
    np.testing.assert_array_equal(out.copy_to_host(), (np.float32(0) + table[1] + table[3])[None])


def test_shapes_are_checked_before_launch(rng):
    stacked = StackedTables([rng.standard_normal((4, 3)).astype(np.float32)])
    ids = cuda.to_device(np.array([1, 2], np.int64))
    with pytest.raises(ValueError, match="splits must be"):
        embedding_bags(stacked, ids, cuda.to_device(np.array([[0, 1, 2]], np.int64)), 0, 1)
    with pytest.raises(ValueError, match="out must be"):
        embedding_bags(stacked, ids, cuda.to_device(np.array([[0, 2]], np.int64)), 0, 1,
                       cuda.device_array((2, 3), np.float32))

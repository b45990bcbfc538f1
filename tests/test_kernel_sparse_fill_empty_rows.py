"""kernels/sparse_fill_empty_rows.py against tf.raw_ops.SparseFillEmptyRows: all four outputs,
exact, on random (unsorted, duplicated) inputs, plus the malicious inputs of TF's advisories."""

import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.sparse_fill_empty_rows import sparse_fill_empty_rows

I64 = np.iinfo(np.int64)


def tf_fill(indices, values, dense_shape, default):
    try:
        out = tf.raw_ops.SparseFillEmptyRows(
            indices=tf.constant(indices, tf.int64), values=tf.constant(values),
            dense_shape=tf.constant(dense_shape, tf.int64), default_value=tf.constant(default))
        return [o.numpy() for o in out], None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def assert_identical(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (what, got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype.kind == "f":
        got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    np.testing.assert_array_equal(got, want, err_msg=what)


def check(indices, values, dense_shape, default):
    indices = np.asarray(indices, np.int64)
    dense_shape = np.asarray(dense_shape, np.int64)
    default = np.asarray(default, values.dtype)
    want, tf_err = tf_fill(indices, values, dense_shape, default)
    err = new_error_buffer()
    got = sparse_fill_empty_rows(indices, values, dense_shape, default.reshape(1), err)
    if tf_err is not None:
        assert err[0] != 0, f"TF raised {tf_err!r} but the kernel accepted the input"
        assert error_text(err)
        return
    assert err[0] == 0, f"kernel rejected an input TF accepts: {error_text(err)}"
    for name, g, w in zip(("indices", "values", "empty_row_indicator", "reverse_index_map"), got, want):
        assert_identical(np.asarray(g), w, name)


def random_values(rng, n, dtype):
    if np.issubdtype(dtype, np.floating):
        v = rng.standard_normal(n).astype(dtype)
        if n:
            v[rng.integers(0, n)] = -0.0
        return v
    return rng.integers(-100, 100, n).astype(dtype)


def random_case(rng, dtype):
    rank = int(rng.integers(1, 4))
    rows = int(rng.integers(1, 10))
    dense_shape = [rows] + [int(d) for d in rng.integers(1, 6, size=rank - 1)]
    nnz = int(rng.integers(0, 3 * rows))
    cols = [rng.integers(0, d, nnz) for d in dense_shape[1:]]
    row_ids = rng.integers(0, rows, nnz)
    if rng.random() < 0.3:
        row_ids.sort()  # the ordered case (maybe with empty rows)
    if rng.random() < 0.2:
        row_ids = np.repeat(np.arange(rows), 2)  # every row full and ordered: TF's shortcut
        nnz = len(row_ids)
        cols = [rng.integers(0, d, nnz) for d in dense_shape[1:]]
    indices = np.stack([row_ids] + cols, axis=1).astype(np.int64).reshape(nnz, rank)
    if nnz > 1 and rng.random() < 0.3:
        indices[rng.integers(0, nnz)] = indices[rng.integers(0, nnz)]  # duplicate entry
    return indices, random_values(rng, nnz, dtype), dense_shape, random_values(rng, 1, dtype)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_fill_empty_rows_random(rng, dtype):
    for _ in range(80):
        check(*random_case(rng, dtype))


def test_fill_empty_rows_keeps_input_order_within_rows(rng):
    # Unsorted input: TF keeps each row's entries in their input order, not sorted by column.
    indices = np.array([[2, 5], [0, 3], [2, 1], [0, 0], [2, 3], [4, 4]], np.int64)
    values = np.arange(6, dtype=np.float32)
    check(indices, values, [6, 7], np.float32(-1))
    check(indices[::-1].copy(), values[::-1].copy(), [6, 7], np.float32(-1))


def test_fill_empty_rows_edges():
    f = np.float32
    check(np.zeros((0, 2)), np.zeros(0, f), [0, 5], f(1))       # no rows at all
    check(np.zeros((0, 2)), np.zeros(0, f), [3, 5], f(1))       # all rows empty
    check(np.zeros((0, 1)), np.zeros(0, f), [4], f(7))          # rank 1
    check([[1, 100]], np.ones(1, f), [3, 5], f(0))              # column out of range: TF allows
    check([[1, -4]], np.ones(1, f), [3, 5], f(0))
    check([[0, 1]], np.ones(1, f), [3, -5], f(0))               # only dense_shape[0] is checked
    check([[0, 1], [0, 1], [0, 1]], np.arange(3, dtype=f), [1, 2], f(9))  # duplicates, one row


@pytest.mark.parametrize("indices, n_values, dense_shape", [
    # Advisories: dense_shape[0] == 0 with entries (null dereference), negative / too large row
    # indices (heap out-of-bounds write), shape/rank mismatches, empty dense_shape.
    ([[0, 1]], 1, [0, 5]),
    ([[1, 1], [0, 0]], 2, [0, 0]),
    ([[-1, 1]], 1, [3, 5]),
    ([[I64.min, 0]], 1, [3, 5]),
    ([[3, 1]], 1, [3, 5]),
    ([[I64.max, 0]], 1, [3, 5]),
    ([[0, 1], [5, 0]], 2, [3, 5]),
    ([[0, 1]], 1, [-2, 5]),
    ([[0, 1]], 1, [I64.min, 5]),
    ([[0, 1]], 2, [3, 5]),          # values longer than indices
    ([[0, 1], [1, 1]], 1, [3, 5]),  # values shorter than indices
    ([[0, 1]], 1, [3]),             # dense_shape shorter than the indices' rank
    ([[0, 1]], 1, [3, 4, 5]),
    ([], 0, []),                    # empty dense_shape, rank-2 (0, 2) indices
])
def test_fill_empty_rows_malicious_inputs_set_error(indices, n_values, dense_shape):
    idx = np.array(indices, np.int64).reshape(len(indices), -1) if indices else np.zeros((0, 2), np.int64)
    values = np.arange(n_values, dtype=np.float32)
    want, tf_err = tf_fill(idx, values, np.array(dense_shape, np.int64), np.float32(0))
    assert tf_err is not None  # guard: these must stay bad inputs for TF
    check(idx, values, dense_shape, np.float32(0))
    err = new_error_buffer()
    sparse_fill_empty_rows(idx, values, np.array(dense_shape, np.int64), np.zeros(1, np.float32), err)
    assert error_text(err) in tf_err  # the kernel reports what TF reports


def test_fill_empty_rows_shape_rank_mismatch_without_entries():
    # TF checks len(dense_shape) == indices.shape[1] even when there are no entries.
    f = np.float32
    check(np.zeros((0, 2)), np.zeros(0, f), [3], f(0))
    check(np.zeros((0, 1)), np.zeros(0, f), [3, 4], f(0))
    check(np.zeros((0, 0)), np.zeros(0, f), [], f(0))
    check(np.zeros((0, 0)), np.zeros(0, f), [3], f(0))
    check(np.zeros((2, 0)), np.zeros(2, f), [3], f(0))


@pytest.fixture(scope="module")
def tf_refuses_huge_dense_shape():
    # TF cannot allocate the outputs (ResourceExhausted). Asked once per module: TF's allocator
    # retries for ~10 s before it gives up.
    want, tf_err = tf_fill(np.zeros((0, 2), np.int64), np.zeros(0, np.float32),
                           np.array([2**62, 3], np.int64), np.float32(0))
    assert tf_err is not None and "OOM" in tf_err
    return tf_err


@pytest.mark.parametrize("rows", [2**62, I64.max, 2**45])
def test_fill_empty_rows_huge_dense_shape_sets_error(tf_refuses_huge_dense_shape, rows):
    # The kernel must report an error, not raise (or crash) when it cannot allocate.
    for indices in (np.zeros((0, 2), np.int64), np.array([[1, 0]], np.int64)):
        values = np.ones(len(indices), np.float32)
        err = new_error_buffer()
        sparse_fill_empty_rows(indices, values, np.array([rows, 3], np.int64), np.zeros(1, np.float32), err)
        assert err[0] != 0 and error_text(err)


def test_fill_empty_rows_large(rng):
    rows = 5000
    idx = np.stack([rng.integers(0, rows, 40000), rng.integers(0, 30, 40000)], axis=1)
    values = rng.standard_normal(40000).astype(np.float32)
    check(idx, values, [rows + 300, 30], np.float32(0))
    order = np.lexsort((idx[:, 1], idx[:, 0]))
    check(idx[order], values[order], [rows + 300, 30], np.float32(0))

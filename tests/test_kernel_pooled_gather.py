"""kernels/pooled_gather.py against TF's own Mean/Sum(Gather(table, ids), axis=1), bit for bit
(the kernel adds in TF's order, long pools and odd widths included), and TF's gather errors for
ids outside the table."""
import numpy as np
import pytest
import tensorflow as tf

from tf_blade.kernels.pooled_gather import pooled_gather

from conftest import assert_matches_tf, run_kernel

STRICT = 1  # the reference gathers with ResourceGather


def tf_pooled(table, ids, mean):
    var = tf.Variable(table)
    try:
        gathered = tf.raw_ops.ResourceGather(resource=var.handle, indices=tf.constant(ids), dtype=var.dtype)
        reduce = tf.raw_ops.Mean if mean else tf.raw_ops.Sum
        return reduce(input=gathered, axis=tf.constant([1])).numpy(), None
    except tf.errors.InvalidArgumentError as e:
        return None, e.message


@pytest.mark.parametrize("mean", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (7, 0), (64, 4), (33, 9)])
def test_matches_tf(rng, mean, dtype, shape):
    table = (rng.standard_normal((50, 16)) * 10).astype(dtype)
    table[3, :4] = [np.nan, np.inf, -0.0, 1e-30]
    ids = rng.integers(0, 50, shape).astype(rng.choice([np.int32, np.int64]))
    assert_matches_tf(*run_kernel(pooled_gather, table, ids, mean, STRICT), *tf_pooled(table, ids, mean))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 3, 8, 10, 16])
def test_long_pools_and_narrow_tables_add_in_tfs_order(rng, dtype, width):
    """From k = 16 on TF's reduction over the middle axis adds every fourth row into one of 4
    packet accumulators, but only for outputs inside whole packets (odd widths mix both orders,
    depending on the row); a table of width 1 is reduced as rows of k. Values of mixed scales, so
    that any other order shows in the last bits."""
    table = (rng.standard_normal((50, width)) * 10.0 ** rng.uniform(-3, 3, (50, width))).astype(dtype)
    for rows, k in ((1, 16), (2, 17), (7, 20), (40, 33), (9, 15), (5, 64), (3, 2)):
        ids = rng.integers(0, 50, (rows, k))
        for mean in (0, 1):
            assert_matches_tf(*run_kernel(pooled_gather, table, ids, mean, STRICT), *tf_pooled(table, ids, mean))


@pytest.mark.parametrize("bad", [50, -1, np.iinfo(np.int64).max, np.iinfo(np.int64).min])
def test_ids_outside_the_table_get_tfs_error(rng, bad):
    table = rng.standard_normal((50, 8)).astype(np.float32)
    ids = rng.integers(0, 50, (6, 3))
    ids[4, 2] = bad
    assert_matches_tf(*run_kernel(pooled_gather, table, ids, 1, STRICT), *tf_pooled(table, ids, 1), same_message=True)


def test_empty_table_and_zero_width():
    for table in (np.zeros((0, 4), np.float32), np.zeros((3, 0), np.float32)):
        for ids in (np.zeros((2, 2), np.int64), np.array([[0, 7]])):  # ResourceGather checks id 7 even at width 0
            assert_matches_tf(*run_kernel(pooled_gather, table, ids, 0, STRICT), *tf_pooled(table, ids, 0),
                              same_message=True)


def test_prefetch_of_any_row_never_faults():
    """kernels/prefetch.py: the lookup kernels ask for rows before checking them; a prefetch
    of an address far outside the table (or of an empty one) must be harmless."""
    from numba import njit

    from tf_blade.kernels.prefetch import prefetch_row

    @njit
    def ask(table, rows):
        for r in rows:
            prefetch_row(table, r)
        return table.sum()

    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    far = np.array([0, 2, -1, 1 << 40, -(1 << 40), (1 << 62)], np.int64)
    assert ask(table, far) == 66
    assert ask(table[:0], far) == 0
    assert ask(table[:, ::2], far.astype(np.int32)) == 30


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [8, 12, 16, 24])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_short_rows_as_vector_lanes(rng, dtype, width, k):
    """Rows of up to 4 ids over widths of whole LANES are added as vectors (kernels/row_lanes.py):
    from +0.0, divided by k for a mean, a single id copied. Specials in the table: NaN,
    infinities, signed zeros, values near overflow; mixed scales elsewhere."""
    table = (rng.standard_normal((40, width)) * 10.0 ** rng.uniform(-3, 3, (40, width))).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dtype).max], dtype)
    table.flat[rng.integers(0, table.size, table.size // 6)] = rng.choice(specials, table.size // 6)
    ids = rng.integers(0, 40, (50, k))
    for mean in (0, 1):
        assert_matches_tf(*run_kernel(pooled_gather, table, ids, mean, STRICT), *tf_pooled(table, ids, mean))

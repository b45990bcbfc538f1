"""kernels/concat.py against tf.raw_ops.ConcatV2, random inputs, errors included.

The kernel gets the axis already made non-negative (the lowering adds the rank to a negative
constant axis) and its parts as a part table (any layout, any number of parts, one compile).
"""
import numpy as np
import pytest
import tensorflow as tf

from numba import njit

from tf_blade.kernels import concat as k_concat
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.parallel import compile_task, run_blocks_here


@njit
def concat(parts, axis, err):
    """As a lowering calls it: the parts' table, the kernel, the parts kept until it returns."""
    out, shape = k_concat.concat(k_concat.part_table(parts), axis, np.empty(0, parts[0].dtype), err)
    k_concat.keep_alive(parts)
    return out, shape


def check(parts, axis):
    rank = parts[0].ndim
    try:
        want = tf.raw_ops.ConcatV2(values=[tf.constant(p) for p in parts],
                                   axis=tf.constant(axis, tf.int32)).numpy()
        tf_err = None
    except tf.errors.InvalidArgumentError as e:
        want, tf_err = None, e.message
    err = new_error_buffer()
    ax = axis + rank if axis < 0 else axis  # what the lowering passes
    out, shape = concat(tuple(parts), ax, err)
    if tf_err is not None:
        assert err[0] != 0, f"TF raised {tf_err!r} but the kernel accepted the input"
        assert error_text(err) in tf_err
        return
    assert err[0] == 0, f"kernel rejected an input TF accepts: {error_text(err)}"
    got = np.ascontiguousarray(out).reshape(tuple(shape))
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# The test's own wrapper compiles for each (dtype, rank, number of parts), ~1 s each: float32
# takes 2 to 4 parts, the other dtypes 3 (zero-width parts still vary what joins).
@pytest.mark.parametrize("dtype, n_parts", [(np.float32, (2, 5)), (np.int64, (3, 4)), (np.bool_, (3, 4))])
def test_concat_random(rng, dtype, n_parts):
    for _ in range(60):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(0, 5, size=rank)]
        axis = int(rng.integers(-rank, rank))
        parts = []
        for _ in range(int(rng.integers(*n_parts))):
            s = list(shape)
            s[axis] = int(rng.integers(0, 4))
            parts.append((rng.integers(-9, 9, size=s)).astype(dtype))
        if rng.random() < 0.2:  # break one non-axis dimension
            k = int(rng.integers(0, len(parts)))
            other = [d for d in range(rank) if d != axis % rank]
            if other:
                s = list(parts[k].shape)
                s[other[0]] += 1
                parts[k] = np.zeros(s, dtype)
        check(parts, axis)


def test_concat_empty_parts():
    f = np.float32
    check([np.zeros((0, 3), f), np.zeros((0, 3), f)], 0)
    check([np.zeros((0, 3), f), np.zeros((0, 2), f)], 1)
    check([np.zeros((2, 0), f), np.ones((2, 3), f), np.zeros((2, 0), f)], 1)
    check([np.zeros((0, 3), f), np.ones((2, 3), f)], 0)


def test_concat_mismatched_dims_set_error():
    f = np.float32
    check([np.ones((2, 3), f), np.ones((3, 3), f)], 1)
    check([np.ones((2, 3), f), np.ones((2, 4), f)], 0)
    check([np.ones((2, 3, 4), f), np.ones((2, 3, 5), f)], -2)


@pytest.mark.parametrize("axis", [2, 3, -3, 100, -2**31])
def test_concat_axis_out_of_range_sets_error(axis):
    f = np.float32
    parts = [np.ones((2, 3), f), np.ones((2, 3), f)]
    try:
        tf.raw_ops.ConcatV2(values=parts, axis=tf.constant(axis, tf.int32))
        raise AssertionError("TF accepted the axis")
    except tf.errors.InvalidArgumentError:
        pass
    err = new_error_buffer()
    concat(tuple(parts), axis + 2 if axis < 0 else axis, err)
    assert err[0] != 0 and error_text(err)


def strided_views(rng, shape, dtype):
    """An array of ``shape`` laid out as a view: transposed, stepped, or reversed."""
    kind = int(rng.integers(0, 3))
    if kind == 0:  # transposed
        return rng.integers(-9, 9, size=shape[::-1]).astype(dtype).T
    if kind == 1:  # every other element of each dim
        return rng.integers(-9, 9, size=[2 * d for d in shape]).astype(dtype)[tuple(slice(None, None, 2) for _ in shape)]
    return rng.integers(-9, 9, size=shape).astype(dtype)[::-1]  # negative strides


def test_concat_reads_parts_of_any_layout(rng):
    """Transposed, stepped and reversed views (Numba's 'A' layout), mixed with C-ordered parts."""
    for _ in range(40):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 4, size=rank)]
        axis = int(rng.integers(0, rank))
        parts = []
        for _ in range(3):
            s = list(shape)
            s[axis] = int(rng.integers(0, 3))
            part = strided_views(rng, s, np.float32)
            parts.append(part if rng.random() < 0.7 else np.ascontiguousarray(part))
        check(parts, axis)


def test_a_new_number_of_parts_compiles_no_kernel():
    """The kernels take a part table, typed by rank and dtype: 2, 3, 5 and 9 parts share one
    compile (a tuple of parts compiled concat again at each new count, ~1.2 s of a new model)."""
    kernels = (k_concat.concat, k_concat.concat_shape, k_concat.concat_into)
    check([np.ones((2, 3), np.int32)] * 2, 1)
    before = [set(k.signatures) for k in kernels]
    for n in (3, 5, 9):
        check([np.arange(6, dtype=np.int32).reshape(2, 3) + i for i in range(n)], 1)
    assert [set(k.signatures) for k in kernels] == before


@njit
def _copy_in_blocks(parts, out, address):
    """concat_into_wide's blocks task over every block, on this thread (a test process has no
    intra-op pool: there run_blocks declines and concat_into_wide copies serially)."""
    table = k_concat.part_table(parts)
    rows = k_concat._block_rows(out)
    run_blocks_here(address, (out.shape[0] + rows - 1) // rows, (table, out))
    k_concat.keep_alive(parts)


@pytest.mark.parametrize("dtype", k_concat.WIDE_DTYPES)
def test_wide_concat_blocks_lay_every_row(rng, dtype):
    """Widths of 0, 1 and thousands (blocks of 6 rows at 5001 columns), rows that end inside a
    block, and a single short block: the blocks task lays out what concat_into does."""
    task = compile_task(*k_concat.WIDE_JOBS[dtype])
    for rows, widths in [(20, [0, 1, 5000]), (7, [3, 4998]), (1, [2, 3]), (0, [5000, 4])]:
        parts = tuple(rng.standard_normal((rows, w)).astype(dtype) for w in widths)
        out = np.full((rows, sum(widths)), np.nan, dtype)
        _copy_in_blocks(parts, out, task.address)
        np.testing.assert_array_equal(out, np.concatenate(parts, axis=1))

"""kernels/parallel.py: a kernel's blocks run through the native op's blade_parallel_for."""
import threading

import numpy as np
from numba import cfunc, njit, types

import tf_blade  # noqa: F401  (loads the native op, which installs the runner)
from tf_blade.kernels.errors import error_rows, error_text, first_failed, set_error
from tf_blade.kernels.parallel import (args_reader, cell_reader, group_caller, result_writer, run_blocks, task_caller,
                                      task_cell)

ARGS = types.Tuple((types.Array(types.int64, 1, "C"), types.Array(types.int64, 1, "C")))
_read = args_reader(ARGS)


def _mark(arg, begin, end):
    out, seen = _read(arg)
    for b in range(begin, end):
        out[b] = b * b
        seen[b] += 1


MARK = cfunc(types.void(types.voidptr, types.int64, types.int64), nogil=True)(_mark)
_address = cell_reader("tf_blade_test_mark_blocks")


@njit(nogil=True)
def _run(fn, n, out, seen):
    return run_blocks(fn, n, (out, seen))


@njit(nogil=True)
def _run_registered(n, out, seen):
    return run_blocks(_address(), n, (out, seen))


def test_every_block_runs_once_and_the_arguments_stay_alive():
    for n in (1, 2, 3, 64, 1000):
        out, seen = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        before = (out.__array_interface__["data"][0], seen.__array_interface__["data"][0])
        assert _run(MARK.address, n, out, seen)
        np.testing.assert_array_equal(out, np.arange(n) ** 2)
        np.testing.assert_array_equal(seen, np.ones(n, np.int64))
        assert (out.__array_interface__["data"][0], seen.__array_interface__["data"][0]) == before


def test_no_task_means_the_caller_runs_the_blocks():
    out, seen = np.zeros(4, np.int64), np.zeros(4, np.int64)
    assert not _run(0, 4, out, seen)
    assert not seen.any()


def test_a_task_is_found_through_its_cell_once_set():
    cell = task_cell("tf_blade_test_mark_blocks")
    out, seen = np.zeros(8, np.int64), np.zeros(8, np.int64)
    cell.value = 0
    assert not _run_registered(8, out, seen) and not seen.any()
    cell.value = MARK.address
    assert _run_registered(8, out, seen)
    np.testing.assert_array_equal(seen, np.ones(8, np.int64))


def test_concurrent_callers_each_get_their_own_blocks():
    results = []

    def call():
        out, seen = np.zeros(5000, np.int64), np.zeros(5000, np.int64)
        for _ in range(20):
            _run(MARK.address, 5000, out, seen)
        results.append(np.array_equal(out, np.arange(5000) ** 2) and (seen == 20).all())

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4


RANGE_RESULT, RANGE_ARGS = types.Tuple((types.Array(types.int64, 1, "C"),)), types.Tuple((types.int64,))
_read_n, _write_range = args_reader(RANGE_ARGS), result_writer(RANGE_RESULT)
_run_range = task_caller(RANGE_RESULT, RANGE_ARGS)


def _range_task(arg, result):
    (n,) = _read_n(arg)
    if n < 0:
        return  # a failing step: nothing written
    _write_range(result, (np.arange(n),))


RANGE = cfunc(types.void(types.voidptr, types.voidptr), nogil=True)(_range_task)


@njit(nogil=True)
def _sizes(fn, ns):
    sizes = np.empty(len(ns), np.int64)
    for i in range(len(ns)):  # one result slot for every call in the loop
        sizes[i] = _run_range(fn, (ns[i],))[0].size
    return sizes


def test_a_task_that_writes_no_result_hands_back_an_empty_one():
    """A failing part returns without writing its result; its caller, even one calling in a
    loop, gets empty arrays that own nothing, not the previous call's results."""
    np.testing.assert_array_equal(_sizes(RANGE.address, np.array([3, -1, 5, -1, -1], np.int64)), [3, 0, 5, 0, 0])


ERR = types.Array(types.uint8, 1, "C")
GROUP_ARGS = types.Tuple((types.int64, ERR))
_read_group_args = args_reader(GROUP_ARGS)
_run_group = group_caller(RANGE_RESULT, GROUP_ARGS, raised_message="raised")


def _group_task(arg, result):
    n, err = _read_group_args(arg)
    if n == -1:
        set_error(err, "bad n")  # a failing step: its error, nothing written
        return
    if n == -2:
        return  # as a task that raised: nothing written, no error of its own
    _write_range(result, (np.arange(n),))


GROUP_TASK = cfunc(types.void(types.voidptr, types.voidptr), nogil=True)(_group_task)


@njit(nogil=True)
def _group_of_four(fn, wide, a, b, c, d, err):
    errs = error_rows(4, err)
    out = _run_group(fn, wide, ((a, errs[0]), (b, errs[1]), (c, errs[2]), (d, errs[3])))
    return out[0][0].size, out[1][0].size, out[2][0].size, out[3][0].size, first_failed(errs, err)


def test_a_group_runs_each_part_once_and_names_the_first_that_failed():
    """kernels/parallel.py group_caller, in parallel (wide) and in turn: each part's result comes
    back in its place, a failed part's result is empty, the first failed part in order is the
    one named, whichever thread ran it, and a part that wrote neither result nor error (a task
    that raised) fails with the given message."""
    for wide in (True, False):
        for _ in range(50):
            err = np.zeros(64, np.uint8)
            assert _group_of_four(GROUP_TASK.address, wide, 3, 1000, 0, 7, err) == (3, 1000, 0, 7, -1)
            assert not err.any()
        err = np.zeros(64, np.uint8)
        assert _group_of_four(GROUP_TASK.address, wide, 3, -1, 5, -1, err) == (3, 0, 5, 0, 1)
        assert error_text(err) == "bad n"
        err = np.zeros(64, np.uint8)
        assert _group_of_four(GROUP_TASK.address, wide, 4, 4, -2, -1, err) == (4, 4, 0, 0, 2)
        assert error_text(err) == "raised"


NOTHING = types.Tuple(())
_read_err = args_reader(types.Tuple((ERR,)))
_run_bare_group = group_caller(NOTHING, types.Tuple((ERR,)), raised_message="raised")
_write_nothing = result_writer(NOTHING)


def _bare_task(arg, result):
    (err,) = _read_err(arg)
    err[1] = 1  # marks that it ran (a 0 first byte: no error)
    _write_nothing(result, ())


BARE_TASK = cfunc(types.void(types.voidptr, types.voidptr), nogil=True)(_bare_task)


@njit(nogil=True)
def _bare_group(fn, wide, err):
    errs = error_rows(3, err)
    out = _run_bare_group(fn, wide, ((errs[0],), (errs[1],), (errs[2],)))
    return len(out), errs[:, 1].sum(), first_failed(errs, err)


def test_a_group_of_parts_without_inputs_or_outputs_runs():
    """Parts that take nothing but their error buffer and give nothing (asserts, dead ends): the
    group's tuples hold only the buffers and its results are empty tuples (Numba's typed List of
    them, which groups once kept, divided by their size, 0, and killed the process: SIGFPE)."""
    for wide in (True, False):
        assert _bare_group(BARE_TASK.address, wide, np.zeros(16, np.uint8)) == (3, 3, -1)

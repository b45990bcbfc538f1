"""A feature layer of hashed string columns in one pass: the ConcatV2 of every column's string bag.

For column c (feature_column/bag_layer.py), ``ConcatV2(Reshape*(_BladeStringBag(S_c, new_shape_c,
table_c)), axis=1)`` is computed straight into the layer's output: ``plan_rows`` checks every shape
the way the bags, Reshapes and ConcatV2 would (same messages, column by column), then ``fill_rows``
hashes and pools blocks of rows, every column of a block in turn, the blocks in parallel. No
per-column arrays, no concat, one parallel launch (on TF's intra-op threads) for the whole layer.
Keras's pooled embeddings of hashed strings (``Mean(Gather(table, Hashing(S)), axis=1)``) and
numeric columns join as columns of their own kinds (below).

Columns arrive as typed Lists (one compile per dtype signature, whatever the number of columns):
``ids`` (S's string ids, flat), ``in_shapes`` (S's shape), ``tstrings`` (kernels/strings.py) and
``tables``; their new_shapes and Reshape targets (``n_targets`` per column) as a shape program
(below) over the runtime ``vectors``. plan and fill read them as one int64 row of addresses and
sizes per column (COLUMN_FIELDS), which the direct path makes straight from the op's pointers.
Rows are combined by ``reduce_runs``: the same bits as the bag.
"""
import contextlib

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from ..runtime.abi import MAX_RANK, call_alloc, copy_to, ptr_from_int
from .concat import mismatch
from .errors import ERR_BYTES, OOM_PREFIX, set_error
from .gather import index_miss
from .parallel import args_reader, cell_reader, compiling_tasks, result_writer, run_blocks, run_blocks_here, task_caller
from .pooled_gather import pool_one_column, pool_vectors, pools_one_column
from .reduce import sum_rows_as_tf
from .shape_ops import resolve_reshape
from .sparse_segment_reduction import reduce_runs
from .string_bag import bag_rows, find_bucket_miss, hash_every_string, hash_rows
from .strings import TSTRING_BYTES, put_into

BLOCK = 128 # rows per task: a block's ids and sums stay in L1 while its columns are pooled
ROWS, INNER, WIDTH, OUT_WIDTH, COLUMN = range(5)  # a column's entries in ``plan_rows``' layout
LAYOUT_FIELDS = 5
# The shape program: per column its new_shape, then its Reshape targets, each vector written as
# [n, kind, value, kind, value, ...]: element i is ``value`` (CONST), dim ``value`` of the
# column's strings (STRINGS_DIM) or table (TABLE_DIM); [1, RUNTIME, m] is runtime vector m.
CONST, STRINGS_DIM, TABLE_DIM, RUNTIME = range(4)
# Column kinds: a string bag; a DENSE [rows, width] value of the layer's dtype (a numeric
# column) copied into place, which travels in ``tables`` (its strings lists hold empty arrays);
# a POOLED [rows, k] string tensor, every string hashed (empty ones too) and its k table rows
# summed or averaged (mode 0 or 1) as Keras pools an Embedding of a Hashing (pooled_gather.py).
BAG, DENSE, POOLED = 0, 1, 2
# What a kernel says when a task it reaches by address was never compiled in this process.
NOT_COMPILED = "tf_blade: the feature layer's kernel is not compiled"
# What a task that raised (Numba's MemoryError: an allocation beyond memory) answers: its cfunc
# wrapper prints the exception and returns, so the caller writes this (task_caller's raised_message).
RAISED = f"{OOM_PREFIX} a tensor in the feature layer's kernel, which raised (a size beyond memory)"
# What a block leaves in fill_wide's ``failed[0]``: its scratch could not be allocated, a POOLED
# column's task is not compiled, or it raised. A pool task answers POOLED, or one of the latter two.
NO_SCRATCH, NO_POOL_TASK, POOL_RAISED = 1, 2, 3
POOLED_ALL = 1


def string_columns(kinds) -> int:
    """How many of a layer's columns read strings (the layer's first inputs)."""
    return sum(kind != DENSE for kind in kinds)


# A column's arrays as plan and fill read them: addresses and sizes in one int64 row
# (COLUMN_FIELDS). Taken from typed Lists in each block, they cost two atomic reference counts a
# read on counters that both threads share (5% of criteo-fc's CPU at 512 rows); built as Lists by
# the direct path, they compiled for ~1 s of a cold start.
IDS, N_IDS, STRINGS, N_STRING_BYTES, TABLE, TABLE_ROWS, TABLE_WIDTH, SHAPE, RANK = range(9)
COLUMN_FIELDS = 9


@njit(cache=True, nogil=True, inline="always")
def _int64s(address, n):
    return carray(ptr_from_int(address, np.int64), (n,))


@njit(cache=True, nogil=True)
def _vector(program, at, in_shape, table_shape, vector_rows):
    """(the vector at ``program[at]``, where the next one starts). ``vector_rows``: the runtime
    vectors' (address, length)."""
    n = program[at]
    if program[at + 1] == RUNTIME:
        m = program[at + 2]
        return _int64s(vector_rows[m, 0], vector_rows[m, 1]), at + 3
    out = np.empty(n, np.int64)
    for i in range(n):
        kind, value = program[at + 1 + 2 * i], program[at + 2 + 2 * i]
        out[i] = value if kind == CONST else (in_shape[value] if kind == STRINGS_DIM else table_shape[value])
    return out, at + 1 + 2 * n


@njit(cache=True, nogil=True, inline="always")
def _dims(rows, width):
    """[rows, width] as int64: np.array of a list compiled the list's code too (~0.1 s a task)."""
    dims = np.empty(2, np.int64)
    dims[0], dims[1] = rows, width
    return dims


@njit(cache=True, nogil=True, inline="always")
def _largest(values, floor):
    """max(floor, *values): np.max iterates with nditer, whose code took ~0.3 s of each task's
    cold compile."""
    most = floor
    for v in values:
        most = max(most, v)
    return most


@njit(cache=True, nogil=True, inline="always")
def columns_from_inputs(ptrs, shapes, columns):
    """plan's and fill's column rows, an array they point into (the caller keeps it alive until
    the layer is filled) and the elements the layer reads (tables of DENSE columns counted),
    straight from the native op's input pointers and shapes (runtime/abi.py) when every input of
    the layer is an input of the op. ``columns[c]``: (its strings' input or -1 for a DENSE column,
    their rank, its table's input)."""
    n = columns.shape[0]
    arrays = np.zeros((n, COLUMN_FIELDS), np.int64)
    counts = np.zeros(n, np.int64)  # strings a column (none for DENSE)
    for c in range(n):
        s, rank = columns[c, 0], columns[c, 1]
        if s >= 0:
            counts[c] = 1
            for d in range(rank):
                counts[c] *= shapes[s * MAX_RANK + d]
    # [0, 0] (a DENSE column's strings' shape, as the Lists give it), then 0..n-1: a column's
    # string ids are views of it, not an array a column
    keep = np.zeros(2 + _largest(counts, 0), np.int64)
    for i in range(keep.shape[0] - 2):  # a loop: a slice assignment compiles its shape checks' messages
        keep[2 + i] = i
    elements = 0
    for c in range(n):
        s, rank, t = columns[c, 0], columns[c, 1], columns[c, 2]
        rows, width = shapes[t * MAX_RANK], shapes[t * MAX_RANK + 1]
        arrays[c, TABLE], arrays[c, TABLE_ROWS], arrays[c, TABLE_WIDTH] = ptrs[2 * t], rows, width
        if s < 0:
            arrays[c, SHAPE], arrays[c, RANK] = keep.ctypes.data, 2
            elements += rows * width
            continue
        arrays[c, IDS], arrays[c, N_IDS] = keep.ctypes.data + 16, counts[c]
        arrays[c, STRINGS], arrays[c, N_STRING_BYTES] = ptrs[2 * s], counts[c] * TSTRING_BYTES
        arrays[c, SHAPE], arrays[c, RANK] = shapes.ctypes.data + 8 * s * MAX_RANK, rank
        elements += counts[c]
    return arrays, keep, elements


def _column_arrays(ids, in_shapes, tstrings, tables, out):
    """The Lists' columns as COLUMN_FIELDS rows; the Lists keep the arrays alive. ``in_shapes``
    may be None (fill reads no shape), and ``out``, which fill reads the tables as, None (plan
    reads only their shapes)."""


@overload(_column_arrays)
def _column_arrays_impl(ids, in_shapes, tstrings, tables, out):
    if not isinstance(out, types.NoneType) and tables.item_type.dtype != out.dtype:
        raise TypingError(f"a layer's tables ({tables.item_type.dtype}) must be of its output's dtype ({out.dtype})")
    shaped = not isinstance(in_shapes, types.NoneType)

    def impl(ids, in_shapes, tstrings, tables, out):
        arrays = np.zeros((len(tables), COLUMN_FIELDS), np.int64)
        for c in range(len(tables)):
            i, s, t = ids[c], tstrings[c], tables[c]
            arrays[c, IDS], arrays[c, N_IDS] = i.ctypes.data, i.shape[0]
            arrays[c, STRINGS], arrays[c, N_STRING_BYTES] = s.ctypes.data, s.shape[0]
            arrays[c, TABLE], arrays[c, TABLE_ROWS], arrays[c, TABLE_WIDTH] = t.ctypes.data, t.shape[0], t.shape[1]
            if shaped:
                arrays[c, SHAPE], arrays[c, RANK] = in_shapes[c].ctypes.data, in_shapes[c].shape[0]
        return arrays
    return impl


@njit(cache=True, nogil=True)
def _vector_rows(vectors):
    """The runtime vectors' (address, length); the List keeps them alive."""
    rows = np.empty((len(vectors), 2), np.int64)
    for m in range(len(vectors)):
        rows[m, 0], rows[m, 1] = vectors[m].ctypes.data, vectors[m].shape[0]
    return rows


# plan_rows, _fill_block, _pool_block, _direct and _direct_row_sum are Numba-inlined into the cfunc
# tasks that run them: compiled alone, each was optimized and emitted as a library of its own and
# then again inside its cfunc (Numba links a callee's code into its caller): 1.5 s of a 20 s cold
# start; _pool_block and pool_vectors, keras-prep's cold start with its child 12.8-13.0 -> 10.7-11.2 s.
# So are the direct cfunc's helpers (columns_from_inputs, fill_rows, _blocks, _check_filled): each
# compiled alone cost Numba's whole pipeline and a machine-code emit (direct 3.5 -> 3.2 s alone).
@njit(cache=True, nogil=True, inline="always")
def plan_rows(arrays, kinds, buckets, modes, n_targets, program, vector_rows, err):
    """(layout, output rows, output width, failing column or -1) of the columns ``arrays``
    (COLUMN_FIELDS rows). layout[c]: the bag's rows, strings per row (inner), width, its width in
    the output after its Reshapes, its first output column."""
    n = arrays.shape[0]
    layout = np.zeros((n, LAYOUT_FIELDS), np.int64)
    first = np.zeros(2, np.int64)
    total = 0
    at = np.int64(0)  # not a literal 0: _vector would compile for that type too
    for c in range(n):
        table_shape = arrays[c, TABLE_ROWS:TABLE_WIDTH + 1]
        width, n_table = table_shape[1], table_shape[0]
        in_shape = _int64s(arrays[c, SHAPE], arrays[c, RANK])
        ids = _int64s(arrays[c, IDS], arrays[c, N_IDS])
        tstrings = carray(ptr_from_int(arrays[c, STRINGS], np.uint8), (arrays[c, N_STRING_BYTES],))
        if kinds[c] == DENSE:
            rows, inner = n_table, 0
        elif kinds[c] == POOLED:  # [rows, k] strings (the rewrite checked the rank)
            rows, inner = in_shape[0], in_shape[1]
            if buckets[c] > n_table:  # a bucket may miss the table
                find_pooled_miss_by_address(ids, tstrings, in_shape, rows, buckets[c], n_table, err)
        else:
            new_shape, at = _vector(program, at, in_shape, table_shape, vector_rows)
            rows, inner = bag_rows(in_shape, new_shape, err)
            if err[0] == 0 and buckets[c] > n_table:  # a bucket may miss the table
                find_bag_miss_by_address(ids, tstrings, in_shape, rows, buckets[c], n_table, err)
        dims = _dims(rows, width)
        for _ in range(n_targets[c]):
            target, at = _vector(program, at, in_shape, table_shape, vector_rows)
            if err[0] == 0:
                dims = resolve_reshape(dims, target, err)
        if err[0] == 0 and dims.shape[0] != 2:
            set_error(err, "tf_blade: a column's reshape changed its rank")
        if err[0] == 0 and c > 0 and dims[0] != first[0]:
            mismatch(err, np.int64(0), first, c, dims)
        if err[0] != 0:
            return layout, 0, 0, c
        if c == 0:
            first[0], first[1] = dims[0], dims[1]  # not first[:]: a slice assignment compiles its shape checks
        layout[c, ROWS], layout[c, INNER], layout[c, WIDTH] = rows, inner, width
        layout[c, OUT_WIDTH], layout[c, COLUMN] = dims[1], total
        total += dims[1]
    return layout, first[0], total, -1


@njit(cache=True, nogil=True)
def _find_pooled_miss(flat, raw, shape, num_buckets, n_table, err):
    """ResourceGather's error for the first hashed string of a POOLED column missing the table."""
    hashed = np.empty(flat.shape[0], np.int64)
    hash_every_string(flat, raw, raw[:0], np.int64(0), flat.shape[0], np.uint64(num_buckets), hashed, np.empty_like(hashed))
    for f in range(hashed.shape[0]):
        if hashed[f] >= n_table:
            index_miss(err, shape, f, hashed[f], n_table)
            return


@njit(cache=True, nogil=True, inline="always")
def _fill_block(b, args):
    """Rows [b * BLOCK, (b + 1) * BLOCK) of every bag, pooled and laid into ``out``. It sets
    ``failed[0]`` (blocks may run on other threads) to NO_SCRATCH, NO_POOL_TASK or POOL_RAISED."""
    arrays, kinds, buckets, modes, layout, out, failed = args
    r0 = b * BLOCK
    most = 1  # the block's ids: its rows' strings, not a whole block of the widest column's
    for c in range(layout.shape[0]):
        most = max(most, (min(layout[c, ROWS], r0 + BLOCK) - r0) * layout[c, INNER])
    try:  # a row may hold any number of strings; a raise here would leave the block unfilled, unsaid
        idbuf = np.empty(2 * most, np.int64)  # twice: the pool task lists places in the second half
        sums = np.empty(BLOCK * _largest(layout[:, WIDTH], 1), out.dtype)  # zeroed where used
        starts = np.empty(BLOCK + 1, np.int64)
        # reduce_runs' output rows: the block's [r0, r0 + BLOCK), then [0, BLOCK) for a scratch
        # layer (a loop into np.empty: np.arange's two forms compiled for ~0.2 s of the task)
        rows_at = np.empty(2 * BLOCK, np.int64)
    except Exception:
        failed[0] = NO_SCRATCH
        return
    for i in range(BLOCK):
        rows_at[i], rows_at[BLOCK + i] = r0 + i, i
    for c in range(layout.shape[0]):
        rows, inner, width = layout[c, ROWS], layout[c, INNER], layout[c, WIDTH]
        out_width, column = layout[c, OUT_WIDTH], layout[c, COLUMN]
        m = min(rows, r0 + BLOCK) - r0
        if m <= 0:
            continue
        table = carray(ptr_from_int(arrays[c, TABLE], out.dtype), (arrays[c, TABLE_ROWS], arrays[c, TABLE_WIDTH]))
        if kinds[c] == DENSE:
            for i in range(m):
                for j in range(width):
                    out[r0 + i, column + j] = table[r0 + i, j]
            continue
        if kinds[c] == POOLED:  # the pool task's (_pool_block)
            pooled = pool_by_address(args, c, r0, idbuf)
            if pooled != POOLED_ALL:
                failed[0] = pooled
            continue
        raw = carray(ptr_from_int(arrays[c, STRINGS], np.uint8), (arrays[c, N_STRING_BYTES],))
        string_ids = carray(ptr_from_int(arrays[c, IDS], np.int64), (arrays[c, N_IDS],))
        hash_rows(string_ids, raw, raw[:0], r0, m, inner, np.uint64(buckets[c]), idbuf, starts)
        if out_width == width:  # the bag's rows are the output's: pooled in place
            for i in range(m):
                if starts[i] == starts[i + 1]:  # an empty row pools to zeros
                    for j in range(width):
                        out[r0 + i, column + j] = 0
            reduce_runs(table, idbuf, starts[:m + 1], rows_at[:m], modes[c], out, column)
        else:  # reshaped to other rows: element f of the bag is element f of its output slice
            acc = sums[:m * width].reshape((m, width))
            acc[:] = 0
            reduce_runs(table, idbuf, starts[:m + 1], rows_at[BLOCK:BLOCK + m], modes[c], acc, np.int64(0))
            for i in range(m):
                for j in range(width):
                    f = (r0 + i) * width + j
                    out[f // out_width, column + f % out_width] = acc[i, j]


@njit(cache=True, nogil=True, inline="always")
def _blocks(layout):
    return (_largest(layout[:, ROWS], 0) + BLOCK - 1) // BLOCK


@njit(cache=True, nogil=True, inline="always")
def _check_filled(failed, err):
    if failed[0] == NO_SCRATCH:
        set_error(err, OOM_PREFIX, " the feature layer's scratch buffers")
    elif failed[0] == NO_POOL_TASK:
        set_error(err, NOT_COMPILED)
    elif failed[0] == POOL_RAISED:
        set_error(err, RAISED)


@njit(cache=True, nogil=True)
def fill_wide(ids, tstrings, tables, kinds, buckets, modes, layout, out, wide, err):
    """``fill_rows`` of the columns' Lists."""
    fill_rows(_column_arrays(ids, None, tstrings, tables, out), kinds, buckets, modes, layout, out, wide, err)


@njit(cache=True, nogil=True, inline="always")
def fill_rows(arrays, kinds, buckets, modes, layout, out, wide, err):
    """Computes the planned layer of the columns ``arrays`` (COLUMN_FIELDS rows, tables of
    ``out``'s dtype) into ``out`` ([rows, width], C order): its blocks on the op's intra-op
    threads when ``wide`` (kernels/parallel.py), else on this thread. Layers of a dtype with a
    blocks task need it compiled first (``compile_layer``)."""
    # Copies: the task reads plain arrays (constants are read-only ones)
    args = (arrays, kinds.copy(), buckets.copy(), modes.copy(), layout, out, np.zeros(1, np.int64))  # failed: int64,
    # as the other arrays here (np.zeros of uint8 compiled for ~0.15 s of the direct cfunc)
    blocks = _blocks(layout) if out.size > 0 else 0
    ran = blocks == 0 or (wide and blocks > 1 and run_blocks(_blocks_address(args), blocks, args)) or _fill_here(args, blocks)
    if not ran:
        set_error(err, NOT_COMPILED)
        return
    _check_filled(args[-1], err)


def _fill_here(args, blocks):
    """Runs fill_wide's blocks on this thread; False when the task they need is not compiled."""


@overload(_fill_here)
def _fill_here_impl(args, blocks):
    # Through the task of the dtype, not a loop over _fill_block: linked, the block code (hash_rows,
    # reduce_runs, pool_rows) was optimized and emitted again in fill_wide and in every caller of
    # fill_wide (the direct cfunc, each model's layer parts).
    read = _task_reader(args, _ARGS, _ADDRESS)
    if read is None:  # a dtype without a task
        def loop(args, blocks):
            for b in range(blocks):
                _fill_block(b, args)
            return True
        return loop

    def through_task(args, blocks):
        address = read()
        if address == 0:
            return False
        run_blocks_here(address, blocks, args)
        return True
    return through_task


# The blocks task of each dtype: a cfunc over fill_rows' argument tuple.
def _args_type(dtype):
    ints, table = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
    return types.Tuple((table, ints, ints, ints, table, types.Array(dtype, 2, "C"), ints))


_ARGS = {"float32": _args_type(types.float32), "float64": _args_type(types.float64)}
_SYMBOLS = {name: f"tf_blade_layer_blocks_{name}" for name in _ARGS}
_ADDRESS = {name: cell_reader(symbol) for name, symbol in _SYMBOLS.items()}
_read_float32, _read_float64 = args_reader(_ARGS["float32"]), args_reader(_ARGS["float64"])


# One Python function per dtype: Numba's disk cache keys a cfunc by its function and C signature,
# which both dtypes' tasks share, so one function compiled twice would load the other's code.
def _blocks_float32(arg, begin, end):
    args = _read_float32(arg)
    for b in range(begin, end):
        _fill_block(b, args)


def _blocks_float64(arg, begin, end):
    args = _read_float64(arg)
    for b in range(begin, end):
        _fill_block(b, args)


_TASKS = {"float32": _blocks_float32, "float64": _blocks_float64}
_compiled = {}


def _task_reader(given, args_types, addresses):
    """For an overload: the cell reader of the per-dtype task whose argument tuple type is
    ``given`` (``args_types`` and ``addresses`` by dtype name), or None when no dtype's is, for the
    overload's linked version."""
    for name, args_type in args_types.items():
        if given == args_type:
            return addresses[name]
    return None


# plan_rows as one task for every dtype (it reads the tables' shapes only), for callers to reach
# by address (``plan_rows_by_address``): linked, its code (every column's checks and messages) was
# optimized and emitted again inside the direct cfunc and inside every model's layer part and entry.
_INTS, _ROWS = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
_PLAN_ARGS = types.Tuple((_ROWS, _INTS, _INTS, _INTS, _INTS, _INTS, _ROWS, types.Array(types.uint8, 1, "C")))
_PLAN_RESULT = types.Tuple((_ROWS, types.int64, types.int64, types.int64))
_PLAN_SYMBOL = "tf_blade_layer_plan"
_PLAN_ADDRESS = cell_reader(_PLAN_SYMBOL)
_read_plan = args_reader(_PLAN_ARGS)
_call_plan, _write_plan = task_caller(_PLAN_RESULT, raised_message=RAISED), result_writer(_PLAN_RESULT)


def _plan_task(arg, result):
    arrays, kinds, buckets, modes, n_targets, program, vector_rows, err = _read_plan(arg)
    _write_plan(result, plan_rows(arrays, kinds, buckets, modes, n_targets, program, vector_rows, err))


def plan_rows_by_address(arrays, kinds, buckets, modes, n_targets, program, vector_rows, err):
    """``plan_rows`` through its task (``compile_layer`` compiles it) for C-contiguous arguments;
    others call plan_rows itself."""


@overload(plan_rows_by_address)
def _plan_rows_by_address_impl(arrays, kinds, buckets, modes, n_targets, program, vector_rows, err):
    if types.Tuple((arrays, kinds, buckets, modes, n_targets, program, vector_rows, err)) != _PLAN_ARGS:
        return lambda arrays, kinds, buckets, modes, n_targets, program, vector_rows, err: plan_rows(
            arrays, kinds, buckets, modes, n_targets, program, vector_rows, err)

    def through_task(arrays, kinds, buckets, modes, n_targets, program, vector_rows, err):
        address = _PLAN_ADDRESS()
        if address == 0:
            set_error(err, NOT_COMPILED)
            return np.zeros((0, LAYOUT_FIELDS), np.int64), np.int64(0), np.int64(0), np.int64(-1)
        return _call_plan(address, (arrays, kinds, buckets, modes, n_targets, program, vector_rows, err))
    return through_task


@njit(cache=True, nogil=True)
def plan_by_address(ids, in_shapes, tstrings, tables, kinds, buckets, modes, n_targets, program, vectors, err):
    """``plan_rows`` of the columns' Lists through the plan task; the Lists keep their arrays alive for the call."""
    return plan_rows_by_address(_column_arrays(ids, in_shapes, tstrings, tables, None), kinds, buckets, modes,
                                n_targets, program, _vector_rows(vectors), err)


# A POOLED column's block is the pool task's, one per dtype, compiled only for layers that have
# one (``compile_layer(dtype, pooled=True)``): linked, pool_rows and its paths compiled in every
# process that filled a layer, for columns criteo-fc does not have (its cold start 18.8 -> 14.8 s),
# and so did hash_every_string in the blocks task (4.9 -> 5.9 s alone). The call passes the blocks'
# own arguments: more of them cost blocks' compile too (~0.2 s for thirteen).
_POOL_ARGS = {name: types.Tuple((args, types.int64, types.int64, types.Array(types.int64, 1, "C")))
              for name, args in _ARGS.items()}
_POOL_SYMBOLS = {name: f"tf_blade_layer_pool_{name}" for name in _POOL_ARGS}
_POOL_ADDRESS = {name: cell_reader(symbol) for name, symbol in _POOL_SYMBOLS.items()}
_read_pool_float32, _read_pool_float64 = args_reader(_POOL_ARGS["float32"]), args_reader(_POOL_ARGS["float64"])
# A pool task's result: POOLED_ALL, or NO_POOL_TASK when the pool_one task it calls is not
# compiled; never 0, so an unwritten (zeroed) result says the task raised (POOL_RAISED).
_call_pool_task, _write_pooled = task_caller(types.int64), result_writer(types.int64)


@njit(cache=True, nogil=True, inline="always")
def _pooled(address, code):
    """A pool task's answer from its ``address`` (0: not compiled) and its result ``code``."""
    return NO_POOL_TASK if address == 0 else (POOL_RAISED if code == 0 else code)


@njit(cache=True, nogil=True, inline="always")
def _pool_block(args, c, r0, ids):
    """POOLED column ``c``'s rows of the block from ``r0`` (blocks' ``args``; ``ids``: room for
    twice their strings, the second half hash_every_string's places): every string hashed, then
    pooled k at a time, a table of one column through its own task. POOLED_ALL, or why not
    (``_pooled``). Scratch from the block, not allocated here: an allocation a column and block took
    keras-prep's layer at 4096 rows 1.84-1.88 -> 2.03-2.19 ms (two threads)."""
    arrays, kinds, buckets, modes, layout, out, failed = args
    m, inner = min(layout[c, ROWS], r0 + BLOCK) - r0, layout[c, INNER]
    n = m * inner
    raw = carray(ptr_from_int(arrays[c, STRINGS], np.uint8), (arrays[c, N_STRING_BYTES],))
    string_ids = carray(ptr_from_int(arrays[c, IDS], np.int64), (arrays[c, N_IDS],))
    hash_every_string(string_ids, raw, raw[:0], r0 * inner, n, np.uint64(buckets[c]), ids, ids[n:])
    table = carray(ptr_from_int(arrays[c, TABLE], out.dtype), (arrays[c, TABLE_ROWS], arrays[c, TABLE_WIDTH]))
    rows, mean, column = ids[:n].reshape((m, inner)), modes[c] == 1, layout[c, COLUMN]
    if pools_one_column(table, rows):
        return pool_one_by_address(table, rows, mean, out, column, r0)
    pool_vectors(table, rows, mean, out, column, r0, layout[c, ROWS])
    return np.int64(POOLED_ALL)


def _pool_float32(arg, result):  # one Python function per dtype, as the blocks tasks
    args, c, r0, ids = _read_pool_float32(arg)  # not *: Numba inlines no star call
    _write_pooled(result, _pool_block(args, c, r0, ids))


def _pool_float64(arg, result):
    args, c, r0, ids = _read_pool_float64(arg)  # not *: Numba inlines no star call
    _write_pooled(result, _pool_block(args, c, r0, ids))


_POOL_TASKS = {"float32": _pool_float32, "float64": _pool_float64}


# Pooling a table of one column (pooled_gather.pool_one_column) is a task of its own too, compiled
# only for layers that may have one: ~1.7 s of the pool task's cold compile.
def _pool_one_args_type(dtype):
    return types.Tuple((types.Array(dtype, 2, "C"), types.Array(types.int64, 2, "C"), types.boolean,
                        types.Array(dtype, 2, "C"), types.int64, types.int64))


_POOL_ONE_ARGS = {"float32": _pool_one_args_type(types.float32), "float64": _pool_one_args_type(types.float64)}
_POOL_ONE_SYMBOLS = {name: f"tf_blade_layer_pool_one_{name}" for name in _POOL_ONE_ARGS}
_POOL_ONE_ADDRESS = {name: cell_reader(symbol) for name, symbol in _POOL_ONE_SYMBOLS.items()}
_read_pool_one_float32 = args_reader(_POOL_ONE_ARGS["float32"])
_read_pool_one_float64 = args_reader(_POOL_ONE_ARGS["float64"])


def _pool_one_float32(arg, result):
    pool_one_column(*_read_pool_one_float32(arg))
    _write_pooled(result, POOLED_ALL)


def _pool_one_float64(arg, result):
    pool_one_column(*_read_pool_one_float64(arg))
    _write_pooled(result, POOLED_ALL)


_POOL_ONE_TASKS = {"float32": _pool_one_float32, "float64": _pool_one_float64}


def pool_one_by_address(table, ids, mean, out, column, first_row):
    """``pool_one_column`` through its task for the table's dtype: POOLED_ALL, or why not
    (``_pooled``). Other argument types call it linked."""


@overload(pool_one_by_address)
def _pool_one_by_address_impl(table, ids, mean, out, column, first_row):
    read = _task_reader(types.Tuple((table, ids, mean, out, column, first_row)), _POOL_ONE_ARGS, _POOL_ONE_ADDRESS)
    if read is None:
        def linked(table, ids, mean, out, column, first_row):
            pool_one_column(table, ids, mean, out, column, first_row)
            return np.int64(POOLED_ALL)
        return linked

    def through_task(table, ids, mean, out, column, first_row):
        address = read()
        code = _call_pool_task(address, (table, ids, mean, out, column, first_row)) if address != 0 else 0
        return _pooled(address, code)
    return through_task


def pool_by_address(args, c, r0, ids):
    """``_pool_block`` through the pool task of the layer's dtype: POOLED_ALL, or why not
    (``_pooled``). Other argument types call it linked."""


@overload(pool_by_address)
def _pool_by_address_impl(args, c, r0, ids):
    read = _task_reader(types.Tuple((args, c, r0, ids)), _POOL_ARGS, _POOL_ADDRESS)
    if read is None:
        return lambda args, c, r0, ids: _pool_block(args, c, r0, ids)

    def through_task(args, c, r0, ids):
        address = read()
        code = _call_pool_task(address, (args, c, r0, ids)) if address != 0 else 0
        return _pooled(address, code)
    return through_task


# plan's checks of columns whose buckets may miss their tables (more buckets than table rows: rare)
# are tasks too, one for every dtype (they read only strings and ints): linked, they hashed the
# strings in plan's code, hash_rows and FarmHash compiled there as well as in the blocks task
# (~1.3 s of plan's cold compile). One for POOLED columns, compiled with the pool tasks, and one
# for bags. Both read (flat, raw, shape, rows, num_buckets, n_table, err).
_MISS_ARGS = types.Tuple((_INTS, types.Array(types.uint8, 1, "C"), _INTS, types.int64, types.int64, types.int64,
                          types.Array(types.uint8, 1, "C")))
_MISS_SYMBOL, _BAG_MISS_SYMBOL = "tf_blade_layer_pooled_miss", "tf_blade_layer_bag_miss"
_MISS_ADDRESS, _BAG_MISS_ADDRESS = cell_reader(_MISS_SYMBOL), cell_reader(_BAG_MISS_SYMBOL)
_read_miss = args_reader(_MISS_ARGS)
# True: it ran. They take err last, so a raise fails them with RAISED.
_call_miss_task, _write_done = task_caller(types.boolean, raised_message=RAISED), result_writer(types.boolean)


def _pooled_miss_task(arg, result):
    flat, raw, shape, _, num_buckets, n_table, err = _read_miss(arg)
    _find_pooled_miss(flat, raw, shape, num_buckets, n_table, err)
    _write_done(result, True)


def _bag_miss_task(arg, result):
    flat, raw, _, rows, num_buckets, n_table, err = _read_miss(arg)
    find_bucket_miss(flat, raw, raw[:0], rows, num_buckets, n_table, err)
    _write_done(result, True)


def _miss_through(read, given, linked):
    """A miss check through the task whose address ``read`` gives (``err`` says so when it is not
    compiled) for arguments of the task's types ``given``; else ``linked``."""
    if given != _MISS_ARGS:
        return linked

    def through_task(flat, raw, shape, rows, num_buckets, n_table, err):
        address = read()
        if address == 0:
            set_error(err, NOT_COMPILED)
        else:
            _call_miss_task(address, (flat, raw, shape, rows, num_buckets, n_table, err))
    return through_task


def find_pooled_miss_by_address(flat, raw, shape, rows, num_buckets, n_table, err):
    """``_find_pooled_miss`` of a POOLED column through its task (``rows`` unused)."""


@overload(find_pooled_miss_by_address)
def _find_pooled_miss_by_address_impl(flat, raw, shape, rows, num_buckets, n_table, err):
    return _miss_through(_MISS_ADDRESS, types.Tuple((flat, raw, shape, rows, num_buckets, n_table, err)),
                         lambda flat, raw, shape, rows, num_buckets, n_table, err: _find_pooled_miss(
                             flat, raw, shape, num_buckets, n_table, err))


def find_bag_miss_by_address(flat, raw, shape, rows, num_buckets, n_table, err):
    """``find_bucket_miss`` of a bag's strings through its task (``shape`` unused)."""


@overload(find_bag_miss_by_address)
def _find_bag_miss_by_address_impl(flat, raw, shape, rows, num_buckets, n_table, err):
    return _miss_through(_BAG_MISS_ADDRESS, types.Tuple((flat, raw, shape, rows, num_buckets, n_table, err)),
                         lambda flat, raw, shape, rows, num_buckets, n_table, err: find_bucket_miss(
                             flat, raw, raw[:0], rows, num_buckets, n_table, err))


_wanted = {}  # jobs of the layers the code generator lowered since they were last compiled
# The order compiling_tasks gets them in: its child takes jobs from the front, this process from the
# back, so the two longest, blocks and the direct cfuncs, start first, one on each side (the plain
# one first: the row sum's calls it). The miss checks hash strings as blocks does, so compiled after
# blocks in the same process they reuse its hash_rows and FarmHash.
_JOB_ORDER = ("direct", "pool", "pool_one", "plan", "concat", "pooled_miss", "bag_miss", "scratch_alloc", "blocks")


def _job_rank(key):
    return _JOB_ORDER.index(key[0]), key[0] == "direct" and key[2]  # the plain direct cfunc first


def want_layer(dtype: str, pooled: bool = False, direct=None, bag_miss: bool = True, pooled_miss: bool = True,
               pool_one: bool = True):
    """Adds the tasks a layer of ``dtype`` runs to those ``compiling_wanted`` compiles next: plan (one
    for every dtype) and blocks (other dtypes fill on one thread, in a loop of their own, and pool
    linked); the pool task when the layer has POOLED columns, and with ``pool_one`` the one for
    tables of one column; plan's checks of buckets that miss a table (run only for a table with
    fewer rows than buckets), of bags with ``bag_miss`` and of POOLED columns with ``pooled_miss``;
    and with ``direct`` (None, or whether the spec has a row sum) the direct cfunc, for a dtype of
    DIRECT_DTYPES (a row sum's with the plain one, which it calls, and its scratch allocator). A
    task left out but needed makes the layer fail saying it is not compiled, never read past a
    table. The loader
    (runtime/compiler.py) compiles a cluster's tasks together, so that a cold start compiles two at
    a time (``compiling_wanted``). Jobs are keyed (kind, details...), kinds from _JOB_ORDER."""
    void_task = types.void(types.voidptr, types.voidptr)
    _wanted[("plan",)] = (void_task, _plan_task, _PLAN_SYMBOL)
    if bag_miss:
        _wanted[("bag_miss",)] = (void_task, _bag_miss_task, _BAG_MISS_SYMBOL)
    if dtype in _TASKS:
        _wanted["blocks", dtype] = (types.void(types.voidptr, types.int64, types.int64), _TASKS[dtype], _SYMBOLS[dtype])
    if direct is not None:
        _wanted["direct", dtype, False] = (DIRECT_SIG, _DIRECT[dtype, False], _DIRECT_SYMBOLS[dtype, False])
    if direct:
        _wanted["direct", dtype, True] = (DIRECT_SIG, _DIRECT[dtype, True], _DIRECT_SYMBOLS[dtype, True])
        _wanted[("scratch_alloc",)] = (SCRATCH_ALLOC_SIG, _scratch_alloc, _SCRATCH_ALLOC_SYMBOL)
    if pooled and dtype in _POOL_TASKS:
        _wanted["pool", dtype] = (void_task, _POOL_TASKS[dtype], _POOL_SYMBOLS[dtype])
    if pooled and pool_one and dtype in _POOL_ONE_TASKS:
        _wanted["pool_one", dtype] = (void_task, _POOL_ONE_TASKS[dtype], _POOL_ONE_SYMBOLS[dtype])
    if pooled and pooled_miss:
        _wanted[("pooled_miss",)] = (void_task, _pooled_miss_task, _MISS_SYMBOL)


def want_task(key, job):
    """Adds a task of another kernel to those ``compiling_wanted`` compiles next (the deferred
    concat's blocks, kernels/concat.py): ``key`` (kind from _JOB_ORDER, details...), ``job``
    (signature, function, symbol)."""
    _wanted[key] = job


def forget_wanted():
    """Drops the wanted tasks not compiled yet: the code generator starts each cluster from none, so
    that a caller that only generates code (tests) leaves nothing for a later load to compile."""
    _wanted.clear()


def compile_wanted():
    """Compiles (or loads from Numba's cache) the wanted tasks not compiled yet in this process, and
    gives kernels their addresses."""
    with compiling_wanted():
        pass


@contextlib.contextmanager
def compiling_wanted():
    """``compile_wanted`` around a block of other work: a cold start's child starts on the tasks
    before the block (runtime/compiler.py compiles a cluster's own code there meanwhile: criteo-fc's
    entry, ~0.7 s, beside the child's direct cfunc) and this process compiles its share after it."""
    jobs = {key: _wanted[key] for key in sorted(_wanted, key=_job_rank) if key not in _compiled}
    _wanted.clear()
    with compiling_tasks(jobs) as compiled:
        yield
    _compiled.update(compiled)


def compile_layer(dtype: str, pooled: bool = False, direct=None):
    """``want_layer`` and ``compile_wanted``: the layer's tasks, compiled now."""
    want_layer(dtype, pooled, direct)
    compile_wanted()


def _blocks_address(args):
    """The address of the blocks task for fill_wide's ``args`` (0: none; fill on this thread)."""


@overload(_blocks_address)
def _blocks_address_impl(args):
    read = _task_reader(args, _ARGS, _ADDRESS)
    return (lambda args: np.int64(0)) if read is None else (lambda args: read())


# A layer whose inputs are all the op's inputs (criteo-fc's), planned and filled by one library
# cfunc per dtype (DIRECT_DTYPES) that the native entry calls through its address (``run_direct``):
# a model's entry then links none of the layer's code. Linked, Numba re-optimized plan, fill_wide
# and their callees inside every model's entry: ~3 s of a new model's compile, library cached.
# The direct spec (int64): a head of HEAD entries [number of op inputs, output index, elements from
# which to fill wide, columns n, program length, row sum], then columns_from_inputs' table
# (n x 3), kinds, buckets, modes, n_targets (n each) and the shape program. The row sum says what
# the output is: the layer (NO_ROW_SUM), or TF's Sum over its rows' axis (in Eigen's order for
# the dtype, kernels/reduce.py) kept as [rows, 1] (ROW_SUM_KEEP) or [rows] (ROW_SUM_DROP): wide &
# deep's wide logit, whose layer is then a scratch buffer of the call.
HEAD = 6
ROW_SUM_AT = 5  # the head's row sum
# What a direct cfunc answers when it is done: never 0, which is what its wrapper answers when it
# raised (an allocation beyond memory), so that ``run_direct`` fails the op then with RAISED
# instead of reporting a layer it never filled. 1 and 2 are the entry's (err says why; an
# allocation failed).
DIRECT_DONE = 3
NO_ROW_SUM, ROW_SUM_KEEP, ROW_SUM_DROP = range(3)
DIRECT_SIG = types.int64(types.CPointer(types.int64), types.CPointer(types.int64), types.CPointer(types.int64),
                         types.voidptr, types.voidptr, types.CPointer(types.uint8))
DIRECT_DTYPES = ("float32",)  # embedding tables are float32; other layers keep the template path
_DIRECT_SYMBOLS = {(name, row_sum): f"tf_blade_layer_direct_{'row_sum_' if row_sum else ''}{name}"
                   for name in DIRECT_DTYPES for row_sum in (False, True)}
_DIRECT_ADDRESS = {key: cell_reader(symbol) for key, symbol in _DIRECT_SYMBOLS.items()}
_PLAIN_FLOAT32 = _DIRECT_ADDRESS["float32", False]


def direct_spec(n_inputs, output, min_elements, columns, kinds, buckets, modes, n_targets, program,
                row_sum=NO_ROW_SUM):
    """The int64 spec the direct cfunc reads (layout above)."""
    parts = [[n_inputs, output, min_elements, len(kinds), len(program), row_sum], np.ravel(columns), kinds,
             buckets, modes, n_targets, program]
    return np.concatenate([np.asarray(p, np.int64).ravel() for p in parts])


@njit(cache=True, nogil=True, inline="always")
def _direct_layer(in_ptrs, in_shapes, spec_ptr, err):
    """The spec's layer from the op's pointers, planned: (fill_rows' columns and layout, the array
    the columns point into, to keep alive until they are filled, rows, width, whether to fill wide,
    output index); ``err`` says when it cannot be."""
    head = carray(spec_ptr, (HEAD,))
    n_in, output, min_elements, n, n_program = head[0], head[1], head[2], head[3], head[4]
    spec = carray(spec_ptr, (HEAD + 7 * n + n_program,))
    at = HEAD + 3 * n
    kinds, buckets, modes, n_targets = spec[at:at + n], spec[at + n:at + 2 * n], spec[at + 2 * n:at + 3 * n], \
        spec[at + 3 * n:at + 4 * n]
    arrays, keep, elements = columns_from_inputs(carray(in_ptrs, (2 * n_in + 1,)), carray(in_shapes, (MAX_RANK * n_in,)),
                                                 spec[HEAD:at].reshape((n, 3)))
    layout, rows, width, _ = plan_rows_by_address(arrays, kinds, buckets, modes, n_targets, spec[at + 4 * n:],
                                                  np.zeros((0, 2), np.int64), err)
    wide = in_ptrs[2 * n_in] == 0 and elements >= min_elements  # the op says whether it runs alone
    return (arrays, kinds, buckets, modes, layout), keep, rows, width, wide, output


@njit(cache=True, nogil=True, inline="always")
def _direct(in_ptrs, in_shapes, spec_ptr, ctx, alloc, errbuf, dtype):
    """The layer, filled in TF's buffer. Returns DIRECT_DONE, or the entry's codes: 1 ``err``
    says why, 2 TF's allocation failed."""
    err = carray(errbuf, (ERR_BYTES,))
    layer, keep, rows, width, wide, output = _direct_layer(in_ptrs, in_shapes, spec_ptr, err)
    if err[0] != 0:
        return 1
    arrays, kinds, buckets, modes, layout = layer
    dims = _dims(rows, width)
    address = call_alloc(alloc, ctx, output, 2, dims.ctypes.data)
    if address == 0 or dims[0] < 0:  # reading dims keeps it alive across the call
        return 2
    fill_rows(arrays, kinds, buckets, modes, layout, carray(ptr_from_int(address, dtype), (rows, width)), wide, err)
    return 1 if err[0] != 0 else DIRECT_DONE + keep[0]  # keep[0] is 0: reading it keeps the ids alive across the fill


# A row sum's layer is filled by the plain direct cfunc, into a scratch buffer that the row-sum cfunc
# hands it through an allocator of its own (``_scratch_alloc``, called where TF's would be): with
# the layer's plan and fill linked into it, the row-sum cfunc compiled them again (5.3 s alone).
SCRATCH_ALLOC_SIG = types.voidptr(types.voidptr, types.int64, types.int64, types.CPointer(types.int64))
_SCRATCH_ALLOC_SYMBOL = "tf_blade_layer_scratch_alloc"
_SCRATCH_ALLOC_ADDRESS = cell_reader(_SCRATCH_ALLOC_SYMBOL)
MOST_SCRATCH_BYTES = 1 << 40  # past this a scratch buffer fails as a failed allocation would


@intrinsic
def _malloc(typingctx, nbytes):
    """C's malloc(nbytes): the address, 0 when it fails (the JIT links the symbol by name)."""
    if nbytes != types.int64:
        return None

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(8).as_pointer(), [ir.IntType(64)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "malloc")
        return builder.ptrtoint(builder.call(fn, [args[0]]), ir.IntType(64))
    return types.int64(nbytes), codegen


@intrinsic
def _free(typingctx, address):
    """C's free of a ``_malloc`` address."""
    if address != types.int64:
        return None

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "free")
        builder.call(fn, [builder.inttoptr(args[0], ir.IntType(8).as_pointer())])
        return context.get_dummy_value()
    return types.none(address), codegen


@intrinsic
def _voidptr(typingctx, address):
    """An integer address as a void*, and a void* as its int64 address."""
    if isinstance(address, types.Integer):
        return types.voidptr(address), lambda context, builder, sig, args: builder.inttoptr(
            args[0], ir.IntType(8).as_pointer())
    if address == types.voidptr:
        return types.int64(address), lambda context, builder, sig, args: builder.ptrtoint(args[0], ir.IntType(64))
    return None


def _itemsize(dtype):
    """The bytes of an element of the NumPy scalar class ``dtype``."""


@overload(_itemsize)
def _itemsize_impl(dtype):
    size = dtype.instance_type.bitwidth // 8
    return lambda dtype: size


def _scratch_alloc(state, index, ndim, dims):
    """The allocator the row-sum cfunc gives the plain direct cfunc: a [rows, width] buffer of
    ``state``'s [address, rows, width, itemsize] itemsize, its address, rows and width written
    there for the row-sum cfunc (which frees it); 0 when it cannot be allocated."""
    s = carray(ptr_from_int(_voidptr(state), np.int64), (4,))
    rows, width, itemsize = dims[0], dims[1], s[3]
    if (ndim != 2 or rows < 0 or width < 0 or itemsize <= 0 or width > MOST_SCRATCH_BYTES // itemsize
            or (width > 0 and rows > MOST_SCRATCH_BYTES // (width * itemsize))):  # no product overflows
        return _voidptr(np.int64(0))
    s[0], s[1], s[2] = _malloc(max(rows * width * itemsize, np.int64(1))), rows, width
    return _voidptr(s[0])


@njit(cache=True, nogil=True, inline="always")
def _direct_row_sum(in_ptrs, in_shapes, spec_ptr, ctx, alloc, errbuf, dtype, plain):
    """``_direct`` for a spec with a row sum: the plain direct cfunc at ``plain`` fills the layer
    into a scratch buffer (``_scratch_alloc``), whose rows are then added up in Eigen's order
    (kernels/reduce.py) into TF's [rows, 1] or [rows]."""
    err = carray(errbuf, (ERR_BYTES,))
    scratch_alloc = _SCRATCH_ALLOC_ADDRESS()
    if plain == 0 or scratch_alloc == 0:  # compile_layer never compiled them in this process
        set_error(err, NOT_COMPILED)
        return 1
    state = np.zeros(4, np.int64)
    state[3] = _itemsize(dtype)
    rc = _call_direct(plain, in_ptrs, in_shapes, spec_ptr, _voidptr(state.ctypes.data), _voidptr(scratch_alloc), errbuf)
    address, rows, width = state[0], state[1], state[2]
    if rc != DIRECT_DONE:
        if address != 0:
            _free(address)
        if rc == 2:  # the scratch, the only allocation it asked for
            set_error(err, OOM_PREFIX, " the feature layer's rows before their sum")
        elif rc == 0:  # it raised
            set_error(err, RAISED)
        return 1 if rc in (0, 2) else rc
    try:  # the scratch is freed whatever happens
        sums = sum_rows_as_tf(carray(ptr_from_int(address, dtype), (rows, width)))
    except Exception:
        _free(address)
        set_error(err, RAISED)
        return 1
    _free(address)
    head = carray(spec_ptr, (HEAD,))
    dims = _dims(rows, 1)
    out = call_alloc(alloc, ctx, head[1], 2 if head[ROW_SUM_AT] == ROW_SUM_KEEP else 1, dims.ctypes.data)
    if out == 0 or dims[0] < 0:  # reading dims keeps it alive across the call
        return 2
    copy_to(out, sums)  # not a slice assignment (abi.copy_to says why)
    return DIRECT_DONE


# Another dtype needs Python functions of its own, as the blocks tasks above. The row sum is a
# cfunc of its own: a model without one (criteo-fc) does not compile it.
def _direct_float32(in_ptrs, in_shapes, spec, ctx, alloc, errbuf):
    return _direct(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, np.float32)  # a class: an array of 0 compiled np.zeros


def _direct_row_sum_float32(in_ptrs, in_shapes, spec, ctx, alloc, errbuf):
    return _direct_row_sum(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, np.float32, _PLAIN_FLOAT32())


_DIRECT = {("float32", False): _direct_float32, ("float32", True): _direct_row_sum_float32}


@intrinsic
def _call_direct(typingctx, address, in_ptrs, in_shapes, spec, ctx, alloc, errbuf):
    """The C function at ``address`` (a DIRECT_SIG cfunc), called."""
    sig = types.int64(address, *DIRECT_SIG.args)

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(64), [context.get_value_type(t) for t in DIRECT_SIG.args])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, args[1:])

    return sig, codegen


def run_direct(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, dtype):
    """The direct cfunc of ``dtype`` (np.float32), or of its row sum when the spec has one, on
    the entry's arguments (or on the slot arrays of ``with_values``) and the spec array ``spec``
    (a constant of the generated module): the entry's return code."""


@overload(run_direct)
def _run_direct_impl(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, dtype):
    if not isinstance(dtype, types.NumberClass) or str(dtype.instance_type) not in DIRECT_DTYPES:
        return None
    read, read_row_sum = (_DIRECT_ADDRESS[str(dtype.instance_type), row_sum] for row_sum in (False, True))

    def impl(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, dtype):
        address = read() if spec[ROW_SUM_AT] == NO_ROW_SUM else read_row_sum()
        if address == 0:  # compile_layer never compiled it in this process
            set_error(carray(errbuf, (ERR_BYTES,)), NOT_COMPILED)
            return 1
        rc = _call_direct(address, in_ptrs, in_shapes, ptr_from_int(spec.ctypes.data, np.int64), ctx, alloc, errbuf)
        if rc == 0:  # it raised: its wrapper printed the exception and answered 0
            set_error(carray(errbuf, (ERR_BYTES,)), RAISED)
            return 1
        return 0 if rc == DIRECT_DONE else rc

    def slots_impl(in_ptrs, in_shapes, spec, ctx, alloc, errbuf, dtype):  # alive for the call: its arguments
        return run_direct(ptr_from_int(in_ptrs.ctypes.data, np.int64), ptr_from_int(in_shapes.ctypes.data, np.int64),
                          spec, ctx, alloc, errbuf, dtype)

    return slots_impl if isinstance(in_ptrs, types.Array) else impl


@njit(cache=True, nogil=True)
def with_values(in_ptrs, in_shapes, n_in, n_values):
    """(pointer slots, shape slots) in the op's layout (runtime/abi.py) for ``n_in`` op inputs
    and then ``n_values`` values the op made (set by ``value_slot``), with the op's spare last
    slot: wide & deep's layer reads its numeric columns from the op's own steps."""
    n = n_in + n_values
    ptrs = np.zeros(2 * n + 1, np.int64)
    shapes = np.zeros(MAX_RANK * n, np.int64)
    put_into(ptrs, 0, carray(in_ptrs, (2 * n_in,)))
    ptrs[2 * n] = in_ptrs[2 * n_in]
    put_into(shapes, 0, carray(in_shapes, (MAX_RANK * n_in,)))
    return ptrs, shapes


def value_slot(ptrs, shapes, slot, value):
    """Slot ``slot`` of ``with_values``' arrays: ``value``, a C-contiguous [rows, width] array
    (typed so, or it does not compile: the layer reads it by pointer) that must outlive the
    direct call."""


@overload(value_slot)
def _value_slot_impl(ptrs, shapes, slot, value):
    if not (isinstance(value, types.Array) and value.ndim == 2 and value.layout == "C"):
        raise TypingError(f"value_slot takes a C-contiguous 2-D array, not {value}")

    def impl(ptrs, shapes, slot, value):
        ptrs[2 * slot] = value.ctypes.data
        shapes[slot * MAX_RANK] = value.shape[0]
        shapes[slot * MAX_RANK + 1] = value.shape[1]

    return impl

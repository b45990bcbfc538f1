"""Multi-table embedding bag on CUDA (numba.cuda): every column's bags in one launch, written
straight into the concatenated [batch, columns * width] output.

The GPU form of what the CPU's fused columns end in (kernels/embedding_bag.py, string_bag.py):
out[r, col] = reduce(table_col[ids_col[k]] for the ids of row r), empty rows zero. Each thread
makes up to 4 output elements of a bag and adds each in ``reduce_runs``' order (TF's SparseSegment* order: the
first id, a remainder, then blocks of 8 summed apart), with the mean/sqrtn scaling done as TF
rounds it, so results are bit-identical to TF's CPU kernels. Ids are checked before their row is
read; the first bad one (columns in order, ids in order) comes back for TF's message.

Tables are stacked once into one [sum of rows, width] device array (``stack_tables``): a serving
process uploads them once and each call sends only ids and row splits. No TensorFlow here, so the
kernel runs (and is timed, benchmarks/cuda_bags.py) on a GPU machine without it; tests run it on
the CPU under NUMBA_ENABLE_CUDASIM=1.
"""
import math

import numpy as np
from numba import cuda

from .sparse_segment_reduction import MEAN, SUM

THREADS = 128
VALUES = 4  # output elements a thread makes (table_row unrolls 4)
NO_ERROR = np.iinfo(np.int64).max


@cuda.jit(device=True, inline=True)
def thread_bag(out, width, n_cols):
    """(row, column, lane, lanes) of this thread's bag; row -1 past the last. Neighbouring
    threads: one bag's elements, then the next column's bag of the row (coalesced stores)."""
    lanes = (width + VALUES - 1) // VALUES
    t = cuda.grid(1)
    if t >= out.shape[0] * n_cols * lanes:
        return -1, 0, 0, lanes
    bag = t // lanes
    row = bag // n_cols
    return row, bag - row * n_cols, t - bag * lanes, lanes


@cuda.jit(device=True, inline=True)
def bad_id(ids, k, n, first_bad):
    """Records position k (atomic minimum) if its id is outside a table of n rows."""
    if ids[k] < 0 or ids[k] >= n:
        cuda.atomic.min(first_bad, 0, k)
        return True
    return False


@cuda.jit(device=True, inline=True)
def table_row(table, r, lane, lanes):
    """This thread's VALUES elements of table row r: lane, lane + lanes, ... (past the width:
    element lane again, never stored). Four loads a thread rather than one: 2.2x on an H200."""
    w = table.shape[1]
    x0 = table[r, lane]
    x1 = table[r, lane + lanes] if lane + lanes < w else x0
    x2 = table[r, lane + 2 * lanes] if lane + 2 * lanes < w else x0
    x3 = table[r, lane + 3 * lanes] if lane + 3 * lanes < w else x0
    return x0, x1, x2, x3


@cuda.jit(device=True, inline=True)
def add(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]


@cuda.jit(device=True, inline=True)
def store_zero(out, row, col, lane, lanes, width):
    o = col * width
    for v in range(VALUES):
        if lane + v * lanes < width:
            out[row, o + lane + v * lanes] = 0


@cuda.jit(device=True, inline=True)
def finish(acc, num, mode, out, row, col, lane, lanes, width):
    """Scales the sums of a bag of ``num`` >= 1 ids as TF does and stores this thread's elements
    at output columns o + lane, o + lane + lanes, ... (o = col * width)."""
    o = col * width
    if num > 1 and mode != SUM:
        # TF's static_cast<T>(n) (or of sqrt(n)), and below 10 ids the T of 1/that: a store into
        # an output element rounds to T exactly so (it is overwritten below).
        out[row, o + lane] = num if mode == MEAN else math.sqrt(float(num))
        d = out[row, o + lane]
        if num < 10:
            out[row, o + lane] = 1.0 / d
            f = out[row, o + lane]
            acc = (acc[0] * f, acc[1] * f, acc[2] * f, acc[3] * f)
        else:
            acc = (acc[0] / d, acc[1] / d, acc[2] / d, acc[3] / d)
    for v in range(VALUES):
        if lane + v * lanes < width:
            out[row, o + lane + v * lanes] = acc[v]


@cuda.jit
def _bags(table, table_starts, table_rows, ids, splits, mode, out, first_bad):
    width = table.shape[1]
    row, col, lane, lanes = thread_bag(out, width, table_starts.shape[0])
    if row < 0:
        return
    start = splits[col, row]
    end = splits[col, row + 1]
    num = end - start
    if num == 0:
        store_zero(out, row, col, lane, lanes, width)
        return
    base = table_starts[col]
    n = table_rows[col]
    # Each id is checked just before its row is read; a thread stops at its bag's first bad id,
    # so the smallest position recorded is the first bad id overall.
    if bad_id(ids, start, n, first_bad):
        return
    acc = table_row(table, base + ids[start], lane, lanes)
    if num > 1:
        r = num & 7
        if r < 2:
            r += 8
        for k in range(start + 1, start + r):
            if bad_id(ids, k, n, first_bad):
                return
            acc = add(acc, table_row(table, base + ids[k], lane, lanes))
        for b in range(start + r, end, 8):
            if bad_id(ids, b, n, first_bad):
                return
            block = table_row(table, base + ids[b], lane, lanes)
            for k in range(b + 1, b + 8):
                if bad_id(ids, k, n, first_bad):
                    return
                block = add(block, table_row(table, base + ids[k], lane, lanes))
            acc = add(acc, block)
    finish(acc, num, mode, out, row, col, lane, lanes, width)


def check_shapes(out, batch, n_cols, width):
    if out.shape != (batch, n_cols * width):
        raise ValueError(f"out must be [{batch}, {n_cols * width}], not {list(out.shape)}")


class StackedTables:
    """Equally wide host tables stacked into one device array (uploaded once), with each table's
    first row and row count, and the device error flag the launches share."""

    def __init__(self, tables):
        if len({t.shape[1] for t in tables}) != 1 or len({t.dtype for t in tables}) != 1:
            raise ValueError("stack_tables: tables must share width and dtype (group columns by both)")
        if any(t.shape[0] == 0 for t in tables):  # TF's lookups fail on any row then
            raise ValueError("stack_tables: an embedding table needs at least one row")
        rows = np.array([t.shape[0] for t in tables], np.int64)
        self.rows = rows
        self.table = cuda.to_device(np.concatenate(tables))
        self.d_starts = cuda.to_device(np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64))
        self.d_rows = cuda.to_device(rows)
        self.first_bad = cuda.to_device(np.array([NO_ERROR], np.int64))  # reset only after an error


stack_tables = StackedTables


def embedding_bags(stacked, ids, splits, mode, batch, out=None):
    """Launches the bags of every column; ``ids``: every column's ids, columns one after another
    (device int64); ``splits``: [columns, batch + 1] absolute offsets into ``ids`` (device int64);
    ``out``: a [batch, columns * width] device array to reuse (else one is allocated). Returns
    (out, None), or (None, TF's message) for the first id outside its table."""
    n_cols, width = stacked.rows.shape[0], stacked.table.shape[1]
    if out is None:
        out = cuda.device_array((batch, n_cols * width), stacked.table.dtype)
    check_shapes(out, batch, n_cols, width)  # the kernel indexes by them: checked before launch
    if splits.shape != (n_cols, batch + 1):
        raise ValueError(f"embedding_bags: splits must be [{n_cols}, {batch + 1}], not {list(splits.shape)}")
    threads = batch * n_cols * ((width + VALUES - 1) // VALUES)
    if threads:
        _bags[(threads + THREADS - 1) // THREADS, THREADS](stacked.table, stacked.d_starts, stacked.d_rows, ids,
                                                           splits, mode, out, stacked.first_bad)
    bad = int(stacked.first_bad.copy_to_host()[0])  # also waits for the launch
    if bad == NO_ERROR:
        return out, None
    stacked.first_bad.copy_to_device(np.array([NO_ERROR], np.int64))
    host_splits = splits.copy_to_host()
    col = int(np.searchsorted(host_splits[:, 0], bad, side="right")) - 1
    value = int(ids[bad:bad + 1].copy_to_host()[0])
    return None, f"indices[{bad - int(host_splits[col, 0])}] = {value} is not in [0, {int(stacked.rows[col])})"

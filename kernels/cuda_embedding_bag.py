"""Multi-table embedding bag on CUDA (numba.cuda): every column's bags in one launch, written
straight into the concatenated [batch, columns * width] output.

The GPU form of what the CPU's fused columns end in (kernels/embedding_bag.py, string_bag.py):
out[r, col] = reduce(table_col[ids_col[k]] for the ids of row r), empty rows zero. Each thread
makes up to 4 output elements of a bag and adds each in ``reduce_runs``' order (TF's SparseSegment* order: the
first id, a remainder, then blocks of 8 summed apart), with the mean/sqrtn scaling done as TF
rounds it, so results are bit-identical to TF's CPU kernels. Ids are checked before their row is
read; the first bad one (columns in order, ids in order) comes back for TF's message.

Tables are stacked once into one [sum of rows, width] device array (``StackedTables``): a serving
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
def _next_id(ids, k):
    """The first position from k on with an id >= 0 (negative: a string bag's empty string)."""
    while ids[k] < 0:
        k += 1
    return k


@cuda.jit(device=True, inline=True)
def pool_in_order(table, base, ids, start, num, lane, lanes):
    """This thread's sums over the ``num`` >= 1 ids >= 0 from ids[start] on (all checked), added
    as ``reduce_runs`` adds a run of num: the first, the next r - 1, then blocks of 8 summed apart
    (num - r is a multiple of 8)."""
    k = _next_id(ids, start)
    acc = table_row(table, base + ids[k], lane, lanes)
    if num > 1:
        r = num & 7
        if r < 2:
            r += 8
        for _ in range(1, r):
            k = _next_id(ids, k + 1)
            acc = add(acc, table_row(table, base + ids[k], lane, lanes))
        for _ in range(r, num, 8):
            k = _next_id(ids, k + 1)
            block = table_row(table, base + ids[k], lane, lanes)
            for _ in range(7):
                k = _next_id(ids, k + 1)
                block = add(block, table_row(table, base + ids[k], lane, lanes))
            acc = add(acc, block)
    return acc


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
    for k in range(start, end):  # every id of the bag before any row is read
        if ids[k] < 0 or ids[k] >= n:
            cuda.atomic.min(first_bad, 0, k)  # the smallest position: the first bad id overall
            return
    acc = pool_in_order(table, base, ids, start, num, lane, lanes)
    finish(acc, num, mode, out, row, col, lane, lanes, width)


class StackedTables:
    """Equally wide host tables stacked into one device array (uploaded once), with each table's
    first row and row count, and the device error flag the launches share."""

    def __init__(self, tables):
        if len({t.shape[1] for t in tables}) != 1 or len({t.dtype for t in tables}) != 1:
            raise ValueError("StackedTables: tables must share width and dtype (group columns by both)")
        if any(t.shape[0] == 0 for t in tables):  # TF's lookups fail on any row then
            raise ValueError("StackedTables: an embedding table needs at least one row")
        self.rows = np.array([t.shape[0] for t in tables], np.int64)
        self.table = cuda.to_device(np.concatenate(tables))
        self.d_starts = cuda.to_device(np.concatenate([[0], np.cumsum(self.rows)[:-1]]).astype(np.int64))
        self.d_rows = cuda.to_device(self.rows)
        self.first_bad = cuda.to_device(np.array([NO_ERROR], np.int64))  # reset only after an error

    def output(self, batch, out=None):
        """``out`` checked to be [batch, columns * width] (the kernels index by it), or a new one;
        and the launch's (blocks, threads), None for nothing to launch."""
        shape = (batch, self.rows.shape[0] * self.table.shape[1])
        if out is None:
            out = cuda.device_array(shape, self.table.dtype)
        if out.shape != shape:
            raise ValueError(f"out must be [{shape[0]}, {shape[1]}], not {list(out.shape)}")
        threads = batch * self.rows.shape[0] * ((self.table.shape[1] + VALUES - 1) // VALUES)
        return out, ((threads + THREADS - 1) // THREADS, THREADS) if threads else None

    def take_error(self):
        """The position of the first bad id the last launch met (None if none); the flag is reset."""
        bad = int(self.first_bad.copy_to_host()[0])  # also waits for the launch
        if bad == NO_ERROR:
            return None
        self.first_bad.copy_to_device(np.array([NO_ERROR], np.int64))
        return bad


def embedding_bags(stacked, ids, splits, mode, batch, out=None):
    """Launches the bags of every column; ``ids``: every column's ids, columns one after another
    (device int64); ``splits``: [columns, batch + 1] absolute offsets into ``ids`` (device int64);
    ``out``: a [batch, columns * width] device array to reuse (else one is allocated). Returns
    (out, None), or (None, TF's message) for the first id outside its table."""
    out, grid = stacked.output(batch, out)
    if splits.shape != (stacked.rows.shape[0], batch + 1):
        raise ValueError(f"embedding_bags: splits must be [{stacked.rows.shape[0]}, {batch + 1}], "
                         f"not {list(splits.shape)}")
    if grid:
        _bags[grid](stacked.table, stacked.d_starts, stacked.d_rows, ids, splits, mode, out, stacked.first_bad)
    bad = stacked.take_error()
    if bad is None:
        return out, None
    host_splits = splits.copy_to_host()
    col = int(np.searchsorted(host_splits[:, 0], bad, side="right")) - 1
    value = int(ids[bad:bad + 1].copy_to_host()[0])
    return None, f"indices[{bad - int(host_splits[col, 0])}] = {value} is not in [0, {int(stacked.rows[col])})"

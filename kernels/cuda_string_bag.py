"""Hash-bucket embedding columns over dense strings on CUDA: strings in, pooled embeddings out.

The GPU form of kernels/string_bag.py for every column at once: for column col, a [batch, k_col]
string input, "" dropped, each other string's bucket Fingerprint64(s) % buckets[col], then the
embedding bag (cuda_embedding_bag.py's per-thread layout and its pool_in_order, TF's order of adds), empty rows zero.
Two launches: one thread per string hashes it (with the CPU library's own Fingerprint64, which
numba.cuda compiles for the GPU, so buckets are TF's bit for bit), then one thread per 4 output
elements pools a bag. The bucket ids live only on the device.

Strings travel as one byte pool (``pack_strings``): all columns' strings row-major, column after
column, ``offsets`` delimiting them.
"""
import numpy as np
from numba import config, cuda

from .cuda_embedding_bag import THREADS, finish, pool_in_order, store_zero, thread_bag
from .farmhash import fingerprint64


if config.ENABLE_CUDASIM:
    def _plain(a):  # the simulator hands kernels wrappers that @njit code cannot type
        return a._item._ary
else:
    @cuda.jit(device=True, inline=True)
    def _plain(a):
        return a


@cuda.jit
def _hash_strings(data, offsets, string_starts, buckets, ids):
    i = cuda.grid(1)
    if i >= ids.shape[0]:
        return
    col = 0
    while col + 1 < string_starts.shape[0] and string_starts[col + 1] <= i:
        col += 1
    length = offsets[i + 1] - offsets[i]
    ids[i] = -1 if length == 0 else np.int64(fingerprint64(_plain(data), offsets[i], length) % np.uint64(buckets[col]))


@cuda.jit
def _string_bags(table, table_starts, table_rows, ids, string_starts, slots, mode, out, first_bad):
    width = table.shape[1]
    row, col, lane, lanes = thread_bag(out, width, table_starts.shape[0])
    if row < 0:
        return
    start = string_starts[col] + row * slots[col]
    end = start + slots[col]
    num = 0
    for k in range(start, end):
        if ids[k] >= 0:
            num += 1
    if num == 0:
        store_zero(out, row, col, lane, lanes, width)
        return
    base = table_starts[col]
    n = table_rows[col]
    for k in range(start, end):  # hashed ids are >= 0: only a table smaller than its buckets fails
        if ids[k] >= n:
            cuda.atomic.min(first_bad, 0, k)
            return
    acc = pool_in_order(table, base, ids, start, num, lane, lanes)  # empty strings (-1) skipped
    finish(acc, num, mode, out, row, col, lane, lanes, width)


def pack_strings(columns):
    """(data, offsets, string_starts, slots) host arrays of [batch, k] byte-string columns."""
    flat = [s for c in columns for s in np.asarray(c, object).ravel()]
    offsets = np.zeros(len(flat) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in flat])
    data = np.frombuffer(b"".join(flat) + b"\0", np.uint8)  # never empty: a device array needs a byte
    sizes = [np.asarray(c, object).size for c in columns]
    string_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    slots = np.array([np.asarray(c, object).shape[1] for c in columns], np.int64)
    return data, offsets, string_starts, slots


def string_bags(stacked, data, offsets, string_starts, slots, buckets, mode, batch, out=None):
    """Every column's hash-bucket embedding bag. ``stacked``: cuda_embedding_bag.StackedTables;
    the rest device arrays from ``pack_strings`` and per-column ``buckets`` (>= 1, int64).
    Returns (out [batch, columns * width], None) or (None, TF's gather message)."""
    n_cols = stacked.rows.shape[0]
    out, grid = stacked.output(batch, out)
    n_strings = offsets.shape[0] - 1
    host_starts, host_slots = string_starts.copy_to_host(), slots.copy_to_host()
    ends = np.append(host_starts[1:], n_strings)
    if host_starts.shape != (n_cols,) or host_slots.shape != (n_cols,) or buckets.shape != (n_cols,) \
            or not np.array_equal(ends - host_starts, batch * host_slots) or (host_slots < 0).any():
        raise ValueError(f"string_bags: every column must hold [{batch}, slots] strings, in order")
    ids = cuda.device_array(max(n_strings, 1), np.int64)
    if n_strings:
        _hash_strings[(n_strings + THREADS - 1) // THREADS, THREADS](data, offsets, string_starts, buckets, ids)
    if grid:
        _string_bags[grid](stacked.table, stacked.d_starts, stacked.d_rows, ids, string_starts, slots, mode, out,
                           stacked.first_bad)
    bad = stacked.take_error()
    if bad is None:
        return out, None
    col = int(np.searchsorted(host_starts, bad, side="right")) - 1
    column_ids = ids[int(host_starts[col]):bad + 1].copy_to_host()
    k = int(np.count_nonzero(column_ids[:-1] >= 0))  # its place among the column's non-empty strings
    return None, f"indices[{k}] = {int(column_ids[-1])} is not in [0, {int(stacked.rows[col])})"

"""GatherV2 / ResourceGather: params viewed as [batch, outer, n, inner], ids as [batch, m]."""
import numpy as np
from numba import njit

from .errors import multi_index, set_error
from .prefetch import PREFETCH_IDS, prefetch_row


@njit(cache=True, nogil=True)
def index_miss(err, shape, flat, value, n):
    """The gathers' error for element ``flat`` (of an ids array of ``shape``) = ``value`` outside
    a table of ``n`` rows."""
    set_error(err, "indices", multi_index(shape, flat), " = ", value, " is not in [0, ", n, ")")


@njit(cache=True, nogil=True)
def gather(params, ids, axis, batch_dims, strict, err):
    """Returns (out as [batch, outer, len(ids) / batch, inner], output shape vector). Ids are
    range-checked first. The first ``batch_dims`` dims of params and ids are shared: batch element
    b gathers from its own slice of params with its own ids (batch_dims <= axis; the lowering
    leaves the ranks TF rejects to TF).

    Like TF's GatherV2, nothing is checked when there is nothing to copy (outer or inner size 0),
    unless ``strict``: ResourceGather checks its ids whatever their rows' width.
    """
    p = np.ascontiguousarray(params)
    batch = 1
    for d in range(batch_dims):
        if p.shape[d] != ids.shape[d]:
            set_error(err, "params.shape[", d, "]: ", p.shape[d], " should be equal to indices.shape[", d, "]: ",
                      ids.shape[d])
            return np.empty((0, 0, 0, 0), p.dtype), np.zeros(0, np.int64)
        batch *= p.shape[d]
    outer = 1
    for d in range(batch_dims, axis):
        outer *= p.shape[d]
    n = p.shape[axis]
    inner = 1
    for d in range(axis + 1, p.ndim):
        inner *= p.shape[d]
    flat_ids = np.ascontiguousarray(ids).ravel()
    m = flat_ids.shape[0] // batch if batch > 0 else 0
    rank_ids = ids.ndim - batch_dims
    shape = np.empty(p.ndim - 1 + rank_ids, np.int64)
    for d in range(axis):
        shape[d] = p.shape[d]
    for d in range(rank_ids):
        shape[axis + d] = ids.shape[batch_dims + d]
    for d in range(axis + 1, p.ndim):
        shape[rank_ids + d - 1] = p.shape[d]
    out = np.empty((batch, outer, m, inner), p.dtype)
    if (outer == 0 or inner == 0) and not strict:
        return out, shape
    for j in range(flat_ids.shape[0]):
        k = flat_ids[j]
        if k < 0 or k >= n:
            index_miss(err, ids.shape, j, k, n)
            return out[:0], shape
    src = p.reshape((batch, outer, n, inner))
    rows = p.reshape((batch * outer * n, inner))  # the same rows, for prefetching
    for b in range(batch):  # explicit scalar loops: Numba slice assignment costs ~10 ns a call
        for o in range(outer):
            first = (b * outer + o) * n
            for j in range(m):
                if j + PREFETCH_IDS < m:
                    prefetch_row(rows, first + flat_ids[b * m + j + PREFETCH_IDS])
                row = flat_ids[b * m + j]
                for c in range(inner):
                    out[b, o, j, c] = src[b, o, row, c]
    return out, shape

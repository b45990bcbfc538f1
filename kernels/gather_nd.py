"""GatherNd: indices [..., k] address the first k dims of params; slices of the rest are copied."""
import numpy as np
from numba import njit

from .errors import add_context, joined, multi_index, set_error


@njit(cache=True, nogil=True)
def gather_nd(params, indices, node_name, err):
    """Returns (out as [n, inner], output shape vector). ``node_name``: the bytes of ", node name:
    <the GatherNd node>", which TF's message for an index out of range ends with."""
    p = np.ascontiguousarray(params)
    idx = np.ascontiguousarray(indices)
    k = idx.shape[idx.ndim - 1]
    if k > p.ndim:
        set_error(err, "index innermost dimension length must be <= params rank; saw: ", k, " vs. ", p.ndim)
        return np.empty((0, 0), p.dtype), np.zeros(0, np.int64)
    n = 1
    for d in range(idx.ndim - 1):
        n *= idx.shape[d]
    inner = 1
    for d in range(k, p.ndim):
        inner *= p.shape[d]
    shape = np.empty(idx.ndim - 1 + p.ndim - k, np.int64)
    for d in range(idx.ndim - 1):
        shape[d] = idx.shape[d]
    for d in range(k, p.ndim):
        shape[idx.ndim - 1 + d - k] = p.shape[d]
    out = np.empty((n, inner), p.dtype)
    if n > 0 and p.size == 0:
        set_error(err, "Requested more than 0 entries, but params is empty.  Params shape: ", p.shape)
        return out[:0], shape
    rows = idx.reshape((n, k)) if k > 0 else np.zeros((n, 0), idx.dtype)
    leading = 1
    for d in range(k):
        leading *= p.shape[d]
    src = p.reshape((leading, inner))
    bad = -1  # TF names the last index out of range (on one thread; its threads race for it)
    for i in range(n):
        flat = 0
        for d in range(k):
            v = rows[i, d]
            if v < 0 or v >= p.shape[d]:
                bad = i
                break
            flat = flat * p.shape[d] + v
        if bad != i:
            for c in range(inner):
                out[i, c] = src[flat, c]
    if bad >= 0:
        if idx.ndim > 1:  # TF: "indices[0,1] = [1, 5] ...", and "indices = [5] ..." for a vector
            set_error(err, "indices", multi_index(np.array(idx.shape)[:-1], bad), " = [", joined(rows[bad]),
                      "] does not index into param shape ", p.shape)
        else:
            set_error(err, "indices = [", joined(rows[bad]), "] does not index into param shape ", p.shape)
        add_context(err, node_name)
        return out[:0], shape
    return out, shape

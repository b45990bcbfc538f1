"""RaggedTensorToSparse (``RaggedTensor.to_sparse()``) of one ragged dimension over a vector of
values, e.g. ``tf.strings.split(s).to_sparse()`` feeding a categorical column: TF's checks on the
row splits, in its order and words, then (indices [n, 2] int64, dense shape [2] int64). The values
pass through unchanged."""
import numpy as np
from numba import njit

from .errors import set_error


@njit(cache=True, nogil=True)
def ragged_to_sparse(splits, n_values, err):
    """The sparse indices and dense shape of ``n_values`` values in rows split at ``splits``."""
    nothing = (np.zeros((0, 2), np.int64), np.zeros(2, np.int64))
    if splits.shape[0] == 0:
        set_error(err, "ragged splits may not be empty.")
        return nothing
    if splits[0] != 0:
        set_error(err, "First value of ragged splits must be 0.")
        return nothing
    for j in range(1, splits.shape[0]):
        if splits[j] < splits[j - 1]:
            set_error(err, "Ragged splits should be non decreasing, but we got ", splits[j - 1], " followed by ",
                      splits[j])
            return nothing
    if splits[splits.shape[0] - 1] != n_values:
        set_error(err, "Final value of ragged splits must match the length the corresponding ragged values.")
        return nothing
    return sparse_of_rows(splits, splits.shape[0] - 1)


@njit(cache=True, nogil=True)
def sparse_of_rows(starts, rows):
    """The indices ([row, place in the row], int64) and dense shape ([rows, widest row]) of
    values laid out row after row, row r at [starts[r], starts[r + 1]): ragged splits, a split's
    tokens (kernels/string_split.py), a cross's combinations (kernels/sparse_cross.py)."""
    indices = np.empty((starts[rows], 2), np.int64)
    widest = 0
    for r in range(rows):
        widest = max(widest, np.int64(starts[r + 1] - starts[r]))
        for i in range(starts[r], starts[r + 1]):
            indices[i, 0] = r
            indices[i, 1] = i - starts[r]
    shape = np.empty(2, np.int64)
    shape[0] = rows
    shape[1] = widest
    return indices, shape

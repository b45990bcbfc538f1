"""A hash-bucket embedding column over a SparseTensor of strings in one pass (the graph it
replaces: feature_column/sparse_string_bag.py).

SparseReshape of the indices (its checks and errors), the id filter's gather of the indices at
every value's place (values past the indices are its error; indices past the values are dropped),
StringToHashBucketFast of every value ("" too: a SparseTensor's values are all present), then the
embedding bag's tail (embedding_bag.py: the fill's checks, the table's, TF's reduction order)."""
import numpy as np
from numba import njit

from .embedding_bag import embedding_bag
from .errors import set_error
from .sparse_reshape import sparse_reshape
from .string_bag import hash_every_string


@njit(cache=True, nogil=True)
def sparse_string_bag(indices, values, offsets, data, dense_shape, new_shape, table, num_buckets, mode, err):
    """``values``: pool ids of V (a vector); ``mode``: 0 sum, 1 mean, 2 sqrtn."""
    reshaped, shape = sparse_reshape(indices, dense_shape, new_shape, err)
    n, nnz = values.shape[0], reshaped.shape[0]
    if err[0] == 0 and n > nnz:
        set_error(err, "indices[", nnz, "] = ", nnz, " is not in [0, ", nnz, ")")
    if err[0] != 0:
        return np.zeros((0, table.shape[1]), table.dtype)
    ids, places = np.empty(n, np.int64), np.empty(n, np.int64)
    hash_every_string(values, offsets, data, np.int64(0), n, np.uint64(num_buckets), ids, places)
    return embedding_bag(reshaped[:n], ids, shape, table, mode, err)

"""Vertical fusion of a hash-bucket embedding column over a SparseTensor of strings into one node.

Over a SparseTensor input (indices I, values V, dense shape D: what ``tf.io.parse_example`` gives
a VarLenFeature) such a column reads, after ``fuse_embedding_bags`` and ``drop_hashed_id_filters``:

    ids = StringToHashBucketFast(V)
    r = SparseReshape(I, D, new_shape)                        (to [prod(D[:-1]), D[-1]])
    keep = Reshape(Where(GreaterEqual(ids, 0)), [-1])         (the id filter: keeps every id)
    out = _BladeEmbeddingBag(GatherV2(r:0, keep, 0), ids, r:1, table)

``out`` becomes ``_BladeSparseStringBag(I, V, D, new_shape, table)`` (kernels/sparse_string_bag.py):
one pass that reshapes, hashes every value ("" too, as TF does) and pools, with the same bits and
errors. The filter keeps every id but is not a no-op: its gather of the indices at the ids'
places truncates I to len(V) entries, and fails past it.
"""
from __future__ import annotations

from typing import Tuple

from ..codegen.parts import ref_meta
from .embedding_bag import FUSED_OP as BAG_OP
from .hashed_id_filter import filtered_ids
from .spec import const_values, producer, producer_op, replace_matches, through_identity

FUSED_OP = "_BladeSparseStringBag"


def _match(spec, bag):
    if bag["op"] != BAG_OP:
        return None
    indices, ids, dense_shape, table = bag["inputs"]
    hashed = producer_op(spec, ids, "StringToHashBucketFast")
    kept = producer_op(spec, indices, "GatherV2")
    if hashed is None or kept is None or const_values(spec, kept["inputs"][2]) != [0] \
            or filtered_ids(spec, kept["inputs"][1]) != through_identity(spec, ids):
        return None
    reshape, j = producer(spec, through_identity(spec, kept["inputs"][0]))
    if reshape is None or reshape["op"] != "SparseReshape" or j != 0 \
            or producer(spec, through_identity(spec, dense_shape)) != (reshape, 1):
        return None
    sparse_indices, sparse_shape, new_shape = reshape["inputs"]
    if ref_meta(spec, hashed["inputs"][0])[1] != 1:  # a SparseTensor's values: the kernel lists them
        return None
    return [sparse_indices, hashed["inputs"][0], sparse_shape, new_shape, table], {
        "num_buckets": hashed["attrs"]["num_buckets"], "mode": bag["attrs"]["mode"]}


def fuse_sparse_string_bags(spec) -> Tuple[dict, int]:
    return replace_matches(spec, _match, FUSED_OP)

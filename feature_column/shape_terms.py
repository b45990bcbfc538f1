"""What a small integer vector of a cluster spec holds, read statically: shape arithmetic.

A feature layer computes each column's reshape targets from Shape ops: Slice, StridedSlice,
GatherV2, Pack, ConcatV2, Prod and Cast over shape vectors and constants. ``terms`` reads such a
vector as a list of terms, one per element: ``("c", value)`` or ``("dim", ref, k)`` (dim k of
the tensor ``ref``); None when any element depends on something else. Rank-0 values read as one
term. The values hold when the producing ops succeed; nothing here replaces their checks.
"""
from __future__ import annotations

from typing import List, Optional

from ..codegen.dtypes import INT32_64
from ..codegen.parts import ref_meta
from .spec import const_values, producer, through_identity


def _ints(spec, ref):
    values = const_values(spec, ref)
    return [int(v) for v in values] if values is not None and all(isinstance(v, int) for v in values) else None


BAG_SHAPE_OP = "_BladeBagShape"  # feature_column/bag_layer.py makes it: a bag's shape after its Reshapes


def terms(spec, ref) -> Optional[List[tuple]]:
    node, _ = producer(spec, through_identity(spec, ref))
    if node is None:
        return None
    op, ins, attrs = node["op"], node["inputs"], node["attrs"]
    if op == "Const":
        values = _ints(spec, ref)
        ok = values is not None and attrs.get("dtype") in INT32_64 and len(attrs["value"]["shape"]) <= 1
        return [("c", v) for v in values] if ok else None
    if op == "Shape":
        return [("dim", ins[0], k) for k in range(ref_meta(spec, ins[0])[1])]
    if op == BAG_SHAPE_OP:  # the bag's [rows, width] after its Reshapes, when they succeed
        if len(ins) > 3:
            last = terms(spec, ins[-1])
            return last if last is not None and all(t[0] != "c" or t[1] >= 0 for t in last) else None
        new_shape = terms(spec, ins[1])
        if new_shape is None or len(new_shape) != 2 or new_shape[0][0] == "c" and new_shape[0][1] < 0:
            return None
        return [new_shape[0], ("dim", ins[2], 1)]
    if op == "Cast":
        return terms(spec, ins[0]) if attrs.get("SrcT") in INT32_64 and attrs.get("DstT") in INT32_64 else None
    if op in ("Pack", "ConcatV2"):
        axis = _ints(spec, ins[-1]) if op == "ConcatV2" else [attrs.get("axis", 0)]
        parts = [terms(spec, r) for r in (ins[:-1] if op == "ConcatV2" else ins)]
        if axis not in ([0], [-1]) or any(p is None or op == "Pack" and len(p) != 1 for p in parts):
            return None
        return [t for p in parts for t in p]
    x = terms(spec, ins[0]) if ins else None
    if x is None:
        return None
    if op == "Slice":
        begin, size = _ints(spec, ins[1]), _ints(spec, ins[2])
        if begin is None or size is None or len(begin) != 1 or not 0 <= begin[0] <= len(x):
            return None
        end = len(x) if size[0] == -1 else begin[0] + size[0]
        return x[begin[0]:end] if begin[0] <= end <= len(x) else None
    if op == "StridedSlice":
        begin, end, stride = (_ints(spec, r) for r in ins[1:4])
        if any(attrs.get(m, 0) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask")) \
                or stride != [1] or begin is None or end is None or len(begin) != 1 or len(end) != 1:
            return None
        b, e = begin[0], end[0]
        if not 0 <= b <= e <= len(x):
            return None
        if attrs.get("shrink_axis_mask", 0) == 1:
            return [x[b]] if b < len(x) else None
        return x[b:e] if attrs.get("shrink_axis_mask", 0) == 0 else None
    if op == "GatherV2":
        index, axis = _ints(spec, ins[1]), _ints(spec, ins[2])
        if index is None or axis != [0] or attrs.get("batch_dims", 0) != 0 or not all(0 <= i < len(x) for i in index):
            return None
        return [x[i] for i in index]
    if op == "Prod":
        axis = _ints(spec, ins[1])
        if axis not in ([0], [-1]) or attrs.get("keep_dims", False):
            return None
        if len(x) == 1:
            return x
        if all(t[0] == "c" for t in x):
            product = 1
            for t in x:
                product *= t[1]
            return [("c", product)]
    return None

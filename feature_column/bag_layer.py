"""Horizontal fusion: a feature layer's hashed string columns become one op.

After ``fuse_string_bags`` a DenseFeatures layer over hash-bucket embedding columns reads

    out = ConcatV2(chain(_BladeStringBag(S_1, new_shape_1, table_1)), ..., axis=-1)

(numeric columns may sit among them: wide & deep's DNN input)
where chain() is the layer's Reshapes to [batch, dim] (behind Identities). Their target shapes
are computed from Shape(bag) and Shape(Reshape(bag)), so first each such Shape becomes
``_BladeBagShape(S, new_shape, table, targets...)``: the same vector, from the bag's inputs and
the Reshape targets alone, with the same checks. Then no one else reads the bags, and the concat
becomes ``_BladeStringBagLayer(S of each bag, table or value of each column, vectors...)``
(kernels/bag_layer.py): every row of every bag hashed and pooled straight into the output, and
every numeric column copied there, in parallel blocks of rows. Same
bits, same errors. Each column's new_shape and Reshape targets travel as a shape program
(attr ``program``): DenseFeatures builds them from Shape(S) and Shape(bag), which shape_terms.py
reads as S's and the table's dims, so the per-column shape arithmetic (~3 us a column a call)
is gone; a vector it cannot read stays a runtime input.
"""
from __future__ import annotations

from collections import Counter
from typing import Tuple

from ..codegen.parts import ref_meta
from ..kernels.bag_layer import BAG, CONST, DENSE, POOLED, RUNTIME, STRINGS_DIM, TABLE_DIM
from .pooled_gather import FUSED_OP as POOLED_OP
from .shape_terms import BAG_SHAPE_OP, terms
from .spec import const_values, producer, replace_matches, through_identity
from .string_bag import FUSED_OP as BAG_OP

FUSED_OP = "_BladeStringBagLayer"


def _chain(spec, ref):
    """(bag node, its Reshapes' targets innermost first, names of the chain's nodes, refs the chain
    passes along) when ``ref`` is a string bag behind Reshapes and Identities; else None."""
    targets, names, refs = [], [], []
    while True:
        node, j = producer(spec, ref)
        if node is None:
            return None
        refs.append(ref)
        names.append(node["name"])
        if node["op"] == "Identity":
            ref = node["inputs"][0]
        elif node["op"] == "Reshape":
            targets.append(node["inputs"][1])
            ref = node["inputs"][0]
        elif node["op"] == BAG_OP and j == 0:
            return node, targets[::-1], names, refs
        else:
            return None


def _shape_match(spec, node):
    if node["op"] != "Shape":
        return None
    found = _chain(spec, node["inputs"][0])
    if found is None:
        return None
    bag, targets, _, _ = found
    return bag["inputs"] + targets, {"out_type": node["attrs"]["out_type"]}


def _program(spec, vector, strings, table, runtime):
    """One vector of the layer's shape program (kernels/bag_layer.py): its terms when they are
    constants and dims of the column's strings or table, else a runtime input, appended to
    ``runtime``."""
    found = terms(spec, vector)
    kinds = {strings: STRINGS_DIM, table: TABLE_DIM}
    if found is None or any(t[0] == "dim" and t[1] not in kinds for t in found):
        runtime.append(vector)
        return [1, RUNTIME, len(runtime) - 1]
    return [len(found)] + [x for t in found for x in ((CONST, t[1]) if t[0] == "c" else (kinds[t[1]], t[2]))]


def _behind_identities(spec, ref):
    """(the node making ``ref`` behind Identities, the refs and names of those Identities)."""
    refs, names = [], []
    node, _ = producer(spec, ref)
    while node is not None and node["op"] == "Identity":
        refs.append(ref)
        names.append(node["name"])
        ref = node["inputs"][0]
        node, _ = producer(spec, ref)
    return node, ref, refs, names


def _pooled(spec, ref):
    """(pooled gather, its hash node, names of the nodes, refs passed along) when ``ref`` is Keras's pooled
    embedding of hashed strings, ``_BladePooledGather(table, StringToHashBucketFast(S))`` behind
    Identities, whose gather was a ResourceGather (it checks every id, as the layer does); else
    None."""
    pooled, ref, refs, names = _behind_identities(spec, ref)
    if pooled is None or pooled["op"] != POOLED_OP or not pooled["attrs"]["strict"]:
        return None
    hashing, ids, id_refs, id_names = _behind_identities(spec, pooled["inputs"][1])
    if hashing is None or hashing["op"] != "StringToHashBucketFast":
        return None
    return pooled, hashing, names + id_names + [pooled["name"], hashing["name"]], refs + id_refs + [ref, ids]


def _reshaped_value(spec, ref):
    """(value, Reshape target, names of the nodes, refs passed along) when ``ref`` is a numeric
    column as DenseFeatures writes it, a rank-2 value reshaped to [its rows, a constant or its
    width] behind Identities; else None. The layer reads the value as the column (an input of
    the op in place, a value the op makes from a slot) and checks the Reshape in its plan (shape
    program): where it succeeds on rows, it is the value itself. Left to a part of its own, each
    such column was a task call a layer call, and wide & deep's numeric part ~4 s of a new
    model's optimize."""
    reshape, ref, refs, names = _behind_identities(spec, ref)
    if reshape is None or reshape["op"] != "Reshape":
        return None
    value, target = reshape["inputs"]
    dims = terms(spec, target)
    if ref_meta(spec, value)[1] != 2 or dims is None or len(dims) != 2 or dims[0] != ("dim", value, 0) \
            or not (dims[1][0] == "c" or dims[1] == ("dim", value, 1)):
        return None
    return value, target, names + [reshape["name"]], refs + [ref]


def _table_shape(spec, table):
    """[rows, width] of a column's table where static (a captured variable's shape), -1 where not."""
    ref = through_identity(spec, table)
    shape = spec["inputs"][int(ref[3:])].get("shape") if ref.startswith("in:") else None
    if not shape or len(shape) != 2:
        return [-1, -1]
    return [-1 if d is None else d for d in shape]


def _layer_match(spec, node, readers):
    """Columns in concat order: a string bag chain read by nothing else is a BAG column, a
    pooled embedding of hashed strings read by nothing else a POOLED one; any other input (a
    numeric column) a DENSE one, copied into place, its DenseFeatures Reshape checked by the
    plan (``_reshaped_value``). At least two string columns."""
    if node["op"] != "ConcatV2" or node["outputs"][0][1] != 2:
        return None
    if const_values(spec, node["inputs"][-1]) not in ([1], [-1]):
        return None
    chains = [_chain(spec, ref) or _pooled(spec, ref) for ref in node["inputs"][:-1]]
    chains = [c if c is not None and all(readers[r] == 1 for r in c[3]) else None for c in chains]
    if sum(c is not None for c in chains) < 2:
        return None  # (a bag or reshape read elsewhere would be computed twice: such a column stays dense)
    runtime, program, strings, columns, absorbed = [], [], [], [], []
    # table_shape: a column's table's static [rows, width] (-1 where not), which decides the tasks
    # its lowering compiles (string_bag_layer.py)
    attrs = {"kind": [], "num_buckets": [], "mode": [], "n_targets": [], "table_shape": []}
    numerics = [_reshaped_value(spec, ref) if chain is None else None for ref, chain in zip(node["inputs"][:-1], chains)]
    numerics = [n if n is not None and all(readers[r] == 1 for r in n[3]) else None for n in numerics]
    for ref, chain, numeric in zip(node["inputs"][:-1], chains, numerics):
        if numeric is not None:
            value, target, names, _ = numeric
            program += _program(spec, target, None, value, runtime)
            columns.append(value)
            absorbed += names
            values = (DENSE, 0, 0, 1, [-1, -1])
        elif chain is None:
            columns.append(ref)
            values = (DENSE, 0, 0, 0, [-1, -1])
        elif chain[0]["op"] == POOLED_OP:
            pooled, hashing, names, _ = chain
            strings.append(hashing["inputs"][0])
            columns.append(pooled["inputs"][0])
            absorbed += names
            values = (POOLED, hashing["attrs"]["num_buckets"], pooled["attrs"]["mean"], 0,
                      _table_shape(spec, pooled["inputs"][0]))
        else:
            bag, targets, names, _ = chain
            s, new_shape, table = bag["inputs"]
            for vector in [new_shape] + targets:
                program += _program(spec, vector, s, table, runtime)
            strings.append(s)
            columns.append(table)
            absorbed += names
            values = (BAG, bag["attrs"]["num_buckets"], bag["attrs"]["mode"], len(targets),
                      _table_shape(spec, table))
        for key, value in zip(attrs, values):
            attrs[key].append(value)
    attrs["program"] = program
    return strings + columns + runtime, attrs, absorbed


def fuse_bag_layers(spec) -> Tuple[dict, int]:
    spec, _ = replace_matches(spec, _shape_match, BAG_SHAPE_OP)
    readers = Counter(ref for n in spec["nodes"] for ref in n["inputs"]) + Counter(spec["outputs"])
    return replace_matches(spec, lambda s, n: _layer_match(s, n, readers), FUSED_OP)

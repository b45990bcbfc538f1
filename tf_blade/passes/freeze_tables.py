"""Static hash tables frozen into the graph (vocabulary columns, StringLookup/IntegerLookup).

A LookupTableFindV2 on a table known to be static (graph/frontend.py) becomes
``_BladeTableFind(keys, default, index arrays...)``: the table's contents and a prebuilt
open-addressing index (kernels/table_lookup.py) enter as constants, so the fused kernel looks
keys up without TF's table. A LookupTableSizeV2 on such a table becomes a constant. A frozen
lookup that ends up outside every cluster is put back as it was (``restore_unfused``): only a
fused op can run ``_BladeTableFind``.
"""
from __future__ import annotations

import copy

import numpy as np

from ..codegen.dtypes import STRING
from ..graph.ir import const_node

TABLE_FIND = "_BladeTableFind"


def freeze_tables(graph, handles, export):
    """Rewrites lookups on the placeholders in ``handles``; returns {node name: original node}."""
    originals, contents = {}, {}
    dtypes = {_table_source(graph, n).name: (n.attrs["Tin"], n.attrs["Tout"])
              for n in graph.nodes.values() if n.op == "LookupTableFindV2"}
    for node in list(graph.nodes.values()):
        if node.op not in ("LookupTableFindV2", "LookupTableSizeV2"):
            continue
        handle = _table_source(graph, node)
        if handle.op != "Placeholder" or handle.name not in handles:
            continue
        if node.op == "LookupTableSizeV2":
            if handle.name not in dtypes:
                continue
            keys, _ = contents.setdefault(handle.name, _in_key_order(*export(handle.name, *dtypes[handle.name])))
            _replace_with_const(graph, node, np.array(len(keys), np.int64))
            continue
        if node.attrs["Tout"] == STRING or graph.rank_of(node.inputs[2]) != 0:
            continue  # string values (IndexToString) and per-key defaults stay in TF
        keys, values = contents.setdefault(handle.name, _in_key_order(*export(handle.name, node.attrs["Tin"], node.attrs["Tout"])))
        originals[node.name] = copy.deepcopy(node)
        arrays = _index_arrays(keys, values)
        refs = [graph.add_const(f"{node.name}/blade_{label}", array) for label, array in arrays]
        node.op = TABLE_FIND
        node.inputs = node.inputs[1:] + refs
        node.attrs = {"string_keys": node.attrs["Tin"] == STRING}
    return originals


def _in_key_order(keys, values):
    """(keys, values) sorted by key. TF exports a table in its hash map's order, which changes
    from process to process: the frozen constants, and so the generated source Numba's disk
    cache is keyed by, would too (a warm start recompiled the parts of a model's lookups)."""
    order = np.argsort(keys, kind="stable")
    return keys[order], values[order]


def _table_source(graph, lookup):
    """The node that produces a lookup's table handle, looking through Identity nodes (inlined
    function calls pass a captured handle on through them)."""
    node = graph.producer(lookup.inputs[0])
    while node.op == "Identity":
        node = graph.producer(node.inputs[0])
    return node


def restore_unfused(graph, originals, clusters):
    fused = {name for cluster in clusters for name in cluster}
    for name, node in originals.items():
        if name not in fused:
            graph.nodes[name] = node


def _index_arrays(keys, values):
    from ..kernels import table_lookup
    if keys.dtype == object:
        encoded = [k if isinstance(k, bytes) else str(k).encode() for k in keys]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        offsets[1:] = np.cumsum([len(k) for k in encoded])
        data = np.frombuffer(b"".join(encoded), np.uint8).copy()
        slots = table_lookup.build_string(offsets, data)
        return [("slots", slots), ("key_offsets", offsets), ("key_data", data), ("values", values)]
    return [("slots", table_lookup.build_int(keys)), ("keys", keys), ("values", values)]


def _replace_with_const(graph, node, array):
    graph.nodes[node.name] = const_node(node.name, array)  # static: no ordering to keep

"""Splits a cluster spec into parts that compile once and run many times.

A 26-column feature layer is 26 copies of one column chain joined by a ConcatV2. Compiling it as
one function makes Numba and LLVM chew through every copy (minutes); compiling one column
template and calling it 26 times takes seconds. A node joins the part of its producers unless it
*joins* independent streams (its producers read disjoint or incomparable sets of cluster
inputs, like the final concat); such a node starts a part of its own. So does a writer (a
lowering with ``emit_plan``: the feature layer), whatever feeds it: alone in its part, the native
entry has the library compute it or fills TF's output with it (generate.py); joined to the one
part that made a numeric column of it, it ran as a template part.

A part of more than MAX_PART_NODES nodes is cut into runs of that many, in its order. Numba's
typing and LLVM grow faster than linearly with a function's size: the 521 shape and index ops of
a Keras ``Hashing(mask_value=...)`` on a ragged input, one function, had not compiled after 22
minutes.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Dict, List

from .dtypes import STRING
from .registry import EFFECT_OPS, LOWERINGS

MAX_PART_NODES = 40


@dataclasses.dataclass
class Part:
    nodes: List[int]                  # spec node indices, topological
    inputs: List[str]                 # outer refs: "in:k" or "node:out" of another part
    outputs: List[str]                # refs of this part's nodes read elsewhere
    key: str = ""                     # template identity: parts with equal keys share code
    after: List[int] = dataclasses.field(default_factory=list)  # nodes of other parts to run first
    effect: bool = False              # holds an Assert: runs before parts that need not precede it


def _producer(ref: str):
    return None if ref.startswith("in:") else int(ref.split(":")[0])


def _after_edges(spec) -> Dict[int, List[int]]:
    """{node: the nodes that must run before it without feeding it}: its control inputs in the
    cluster (``after`` names, those the spec rewrites kept)."""
    index = {n["name"]: i for i, n in enumerate(spec["nodes"])}
    return {k: [index[name] for name in n["after"] if name in index]
            for k, n in enumerate(spec["nodes"]) if n.get("after")}


def decompose(spec) -> List[Part]:
    nodes = spec["nodes"]
    parent = list(range(len(nodes)))

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    reads = []  # per node: the cluster inputs it depends on
    for k, node in enumerate(nodes):
        producers = [p for p in map(_producer, node["inputs"]) if p is not None and nodes[p]["op"] != "Const"]
        sets = [reads[p] for p in producers]
        mine = frozenset(int(r[3:]) for r in node["inputs"] if r.startswith("in:")).union(*sets)
        reads.append(mine if node["op"] != "Const" else frozenset())
        joins = len(set(sets)) >= 2 and frozenset().union(*sets) not in sets or is_writer(node["op"])
        if node["op"] != "Const" and not joins:
            for p in producers:
                parent[find(p)] = find(k)

    groups: Dict[int, List[int]] = {}
    for k, node in enumerate(nodes):
        if node["op"] != "Const":
            groups.setdefault(find(k), []).append(k)
    after = _after_edges(spec)
    lifted = lifted_consts(spec)
    parts = [run for members in groups.values() for run in _cut(spec, _make_part(spec, members, after, lifted), after, lifted)]
    whole = _make_part(spec, [k for k in range(len(nodes)) if nodes[k]["op"] != "Const"], after, lifted)
    return _topological(parts) or _topological(_cut(spec, whole, after, lifted)) or [whole]


def lifted_consts(spec) -> List[int]:
    """The numeric Const nodes that are inputs of the parts reading them, not code in them: those
    every reader's lowering takes as a run-time value (``Lowering.const_is_value``). Columns that
    differ only in their constants (a normalizer's mean and scale) then share one template: 20
    numeric columns of (x - m) * s made 20 templates, a compile each (~0.7 s), at every new model
    and at every retraining that changed a mean. The cluster's code holds their values
    (generate.py)."""
    from .lowerings.const import const_array
    from .registry import load_all
    lowerings = load_all()
    nodes = spec["nodes"]
    readers: Dict[int, list] = {}
    for node in nodes:
        for index, ref in enumerate(node["inputs"]):
            p = _producer(ref)
            if p is not None and nodes[p]["op"] == "Const":
                readers.setdefault(p, []).append((node, index))
    lifted = []
    for k in sorted(readers):
        if nodes[k]["outputs"][0][0] == STRING or f"{k}:0" in spec["outputs"]:
            continue
        value = const_array(nodes[k]["attrs"]["value"])
        if all(lowerings[node["op"]].const_is_value(node, index, value) for node, index in readers[k]):
            lifted.append(k)
    return lifted


def is_writer(op: str) -> bool:
    """Whether ``op``'s lowering writes its output into a given buffer (has ``emit_plan``)."""
    return hasattr(LOWERINGS.get(op), "emit_plan")


def _cut(spec, part: Part, after_edges, lifted) -> List[Part]:
    """``part``, or runs of MAX_PART_NODES of its nodes (constants go where they are read)."""
    nodes = [k for k in part.nodes if spec["nodes"][k]["op"] != "Const"]
    if len(nodes) <= MAX_PART_NODES:
        return [part]
    return [_make_part(spec, nodes[i:i + MAX_PART_NODES], after_edges, lifted)
            for i in range(0, len(nodes), MAX_PART_NODES)]


def part_deps(parts: List[Part]) -> List[set]:
    """Per part, the parts it must follow: those making its inputs or holding its ``after`` nodes."""
    owner = {ref: i for i, p in enumerate(parts) for ref in p.outputs}
    node_owner = {k: i for i, p in enumerate(parts) for k in p.nodes}
    return [{owner[r] for r in p.inputs if r in owner} | {node_owner[k] for k in p.after if k in node_owner} - {i}
            for i, p in enumerate(parts)]


def _make_part(spec, members, after_edges, lifted) -> Part:
    nodes = spec["nodes"]
    inside = set(members)
    consts = sorted({p for k in members for ref in nodes[k]["inputs"] if ref not in text_refs(spec, nodes[k])
                     for p in [_producer(ref)] if p is not None and nodes[p]["op"] == "Const" and p not in lifted})
    ordered = _canonical_order(spec, inside | set(consts), after_edges)
    inputs = []
    for k in ordered:
        for ref in nodes[k]["inputs"]:
            p = _producer(ref)
            if (p is None or p not in inside and (nodes[p]["op"] != "Const" or p in lifted)) and ref not in inputs:
                inputs.append(ref)
    outputs = []
    used_outside = set(spec["outputs"])
    for k, node in enumerate(nodes):
        if k not in inside:
            used_outside.update(node["inputs"])
    for k in members:
        for j in range(len(nodes[k]["outputs"])):
            if f"{k}:{j}" in used_outside:
                outputs.append(f"{k}:{j}")
    after = sorted({a for k in members for a in after_edges.get(k, ()) if a not in inside})
    effect = any(nodes[k]["op"] in EFFECT_OPS for k in members)
    part = Part(nodes=ordered, inputs=inputs, outputs=outputs, after=after, effect=effect)
    part.key = _template_key(spec, part)
    return part


def _canonical_order(spec, members, after_edges) -> List[int]:
    """A topological order of ``members`` that depends only on the computation, not on where
    the graph happened to list each node: Grappler interleaves the 26 column chains differently,
    and equal chains must yield equal template source (one compile, not one per ordering)."""
    from .registry import load_all
    lowerings = load_all()
    nodes = spec["nodes"]
    shape_of: Dict[int, str] = {}

    def shape(k):  # a Merkle hash of what node k computes from outside values
        if k not in shape_of:
            node = nodes[k]
            runtime = lowerings[node["op"]].run_time_attrs()
            ins = [[shape(p), ref.split(":")[1]] if p in members else list(ref_meta(spec, ref))
                   for ref in node["inputs"] for p in [_producer(ref)]]
            attrs = {a: v for a, v in node["attrs"].items() if a not in runtime}
            text = json.dumps([node["op"], attrs, ins, node["outputs"]], sort_keys=True)
            shape_of[k] = hashlib.sha256(text.encode()).hexdigest()
        return shape_of[k]

    waiting = {k: {p for p in list(map(_producer, nodes[k]["inputs"])) + after_edges.get(k, []) if p in members}
               for k in members}
    order: List[int] = []
    while waiting:  # an Assert as soon as it can run (Asserts in graph order): TF's first error
        ready = min((k for k, deps in waiting.items() if not deps),
                    key=lambda k: (False, "", k) if nodes[k]["op"] in EFFECT_OPS else (True, shape(k), k))
        order.append(ready)
        del waiting[ready]
        for deps in waiting.values():
            deps.discard(ready)
    return order


def _template_key(spec, part: Part) -> str:
    """Everything that shapes the code, nothing that only feeds values (runtime attrs)."""
    from .registry import load_all
    lowerings = load_all()
    local = {ref: f"p{i}" for i, ref in enumerate(part.inputs)}
    meta = [list(ref_meta(spec, ref)) for ref in part.inputs]
    body = []
    for n, k in enumerate(part.nodes):
        node = spec["nodes"][k]
        runtime = lowerings[node["op"]].run_time_attrs()
        attrs = {a: v for a, v in node["attrs"].items() if a not in runtime}
        texts = text_refs(spec, node)
        body.append([node["op"], attrs, ["text" if r in texts else local[r] for r in node["inputs"]], node["outputs"]])
        for j in range(len(node["outputs"])):
            local[f"{k}:{j}"] = f"{n}:{j}"
    outs = [local[r] for r in part.outputs]
    return json.dumps([meta, body, outs], sort_keys=True)


def text_refs(spec, node) -> set:
    """The string constants ``node`` reads through its lowering's texts(), not as values of its
    part (Lowering.string_consts_are_texts)."""
    if not getattr(LOWERINGS.get(node["op"]), "string_consts_are_texts", False):
        return set()
    return {r for r in node["inputs"] for p in [_producer(r)]
            if p is not None and spec["nodes"][p]["op"] == "Const" and ref_meta(spec, r)[0] == STRING}


def ref_meta(spec, ref):
    """(dtype enum, rank) of a spec reference: "in:k" or "node:output"."""
    if ref.startswith("in:"):
        inp = spec["inputs"][int(ref[3:])]
        return inp["dtype"], inp["rank"]
    k, j = map(int, ref.split(":"))
    dtype, rank = spec["nodes"][k]["outputs"][j]
    return dtype, rank


def _topological(parts: List[Part]):
    deps = part_deps(parts)
    done, order = set(), []
    while len(order) < len(parts):
        ready = [i for i in range(len(parts)) if i not in done and deps[i] <= done]
        if not ready:
            return None  # the split would be cyclic: compile as one part instead
        for i in sorted(ready, key=lambda i: not parts[i].effect):  # Asserts first, as in TF
            done.add(i)
            order.append(parts[i])
    return order

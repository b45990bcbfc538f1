"""Reading and editing cluster specs (the JSON graph codegen sees) for the spec rewrites."""
from __future__ import annotations

from typing import Dict

from ..codegen.registry import EFFECT_OPS


def producer(spec, ref: str):
    """(node, output index) that makes ``ref``, or (None, None) for a cluster input."""
    if ref.startswith("in:"):
        return None, None
    k, j = map(int, ref.split(":"))
    return spec["nodes"][k], j


def through_identity(spec, ref: str) -> str:
    node, _ = producer(spec, ref)
    while node is not None and node["op"] == "Identity":
        ref = node["inputs"][0]
        node, _ = producer(spec, ref)
    return ref


def producer_op(spec, ref: str, *ops):
    """The node making ``ref`` (past Identity nodes) when its op is one of ``ops``, else None."""
    node, _ = producer(spec, through_identity(spec, ref))
    return node if node is not None and node["op"] in ops else None


def outputs_past_identities(spec):
    """An output that is an Identity of another node's value (a function's return, once Grappler
    moved it into the cluster) becomes that value, so writers that fill TF's output buffer in
    place still see their node as the output. Kept: an Identity ordered after an Assert, one of an
    op input, one whose value is already an output. Returns (spec, number replaced)."""
    outputs, changed = list(spec["outputs"]), 0
    for i, ref in enumerate(outputs):
        node, _ = producer(spec, ref)
        if node is None or node["op"] != "Identity" or node.get("after"):
            continue
        inner = node["inputs"][0]
        if not inner.startswith("in:") and inner not in outputs:
            outputs[i] = inner
            changed += 1
    if not changed:
        return spec, 0
    return prune_dead_nodes(dict(spec, outputs=outputs)), changed


def const_values(spec, ref):
    node, _ = producer(spec, ref)
    if node is None or node["op"] != "Const":
        return None
    return node["attrs"]["value"]["values"]


def replace_matches(spec, match, fused_op: str):
    """Replaces every node ``match(spec, node)`` accepts, returning (inputs, attrs) or (inputs,
    attrs, names of the other nodes it absorbs), with one ``fused_op`` node of the same name and
    outputs, which runs after whatever the absorbed nodes ran after; returns (spec, number
    replaced)."""
    nodes = [dict(n) for n in spec["nodes"]]
    fused = 0
    for k, node in enumerate(spec["nodes"]):
        found = match(spec, node)
        if found is None:
            continue
        inputs, attrs = found[:2]
        nodes[k] = {"name": node["name"], "op": fused_op, "inputs": inputs, "attrs": attrs,
                    "outputs": node["outputs"]}
        after = list(node.get("after", ())) + list(found[2] if len(found) > 2 else ())
        if after:  # absorbed nodes stand for what they ran after (prune_dead_nodes resolves them)
            nodes[k]["after"] = after
        fused += 1
    if not fused:
        return spec, 0
    return prune_dead_nodes(dict(spec, nodes=nodes)), fused


def prune_dead_nodes(spec) -> dict:
    """Drops nodes no output (and no Assert: its effect is the error) depends on; renumbers
    references."""
    nodes = spec["nodes"]
    live = set()
    stack = [r for r in spec["outputs"] if not r.startswith("in:")]
    stack += [f"{k}:0" for k, node in enumerate(nodes) if node["op"] in EFFECT_OPS]
    while stack:
        k = int(stack.pop().split(":")[0])
        if k in live:
            continue
        live.add(k)
        stack += [r for r in nodes[k]["inputs"] if not r.startswith("in:")]
    new_index: Dict[int, int] = {k: i for i, k in enumerate(sorted(live))}

    def renumber(ref):
        if ref.startswith("in:"):
            return ref
        k, j = ref.split(":")
        return f"{new_index[int(k)]}:{j}"

    index = {node["name"]: k for k, node in enumerate(nodes)}

    def live_after(names, seen):
        """``names`` with each dropped node replaced by what it ran after: an Assert chain
        (assert 3 after the guard of assert 1) survives the guard's removal."""
        out = []
        for name in names:
            k = index.get(name)
            if k in live:
                out.append(name)
            elif k is not None and name not in seen:
                seen.add(name)
                out += live_after(nodes[k].get("after", ()), seen)
        return out

    kept = []
    for k in sorted(live):
        node = dict(nodes[k], inputs=[renumber(r) for r in nodes[k]["inputs"]])
        if node.get("after"):
            node["after"] = list(dict.fromkeys(live_after(node["after"], set())))
        kept.append(node)
    return dict(spec, nodes=kept, outputs=[renumber(r) for r in spec["outputs"]])


def replace_uses(spec, old: Dict[str, str]) -> dict:
    """Every reference to a key of ``old`` reads its value instead."""
    nodes = [dict(n, inputs=[old.get(r, r) for r in n["inputs"]]) for n in spec["nodes"]]
    return dict(spec, nodes=nodes, outputs=[old.get(r, r) for r in spec["outputs"]])

"""Capability-based, cycle-safe partitioning of supported nodes into clusters.

Nodes are visited in topological order and merged with the clusters of their supported
producers unless the merge would create a cycle: a path that leaves one cluster and re-enters the
other through an unsupported node (the fused op could then neither run before nor after it).
Then clusters that do not depend on each other merge horizontally (same cycle test): separate
input layers, or the deep and wide halves of one model, become one op, one call, whose parts run
in parallel. A cluster that another cluster waits on (through TF ops) is not merged: its waiting
consumers would then wait for the whole merged op.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Set

from ..graph.ir import Graph, parse_ref


def partition(graph: Graph, is_supported: Callable[[str], bool]) -> List[List[str]]:
    order = graph.topological_order()
    position = {name: i for i, name in enumerate(order)}
    users = graph.consumers()
    cluster_of: Dict[str, int] = {}
    members: Dict[int, Set[str]] = {}

    def creates_cycle(a: Set[str], b: Set[str]) -> bool:
        for src, dst in ((a, b), (b, a)):
            limit = max(position[m] for m in dst)
            stack = [u for m in src for u in users[m] if u not in src and u not in dst]
            seen = set()
            while stack:
                name = stack.pop()
                if name in seen or position[name] > limit:
                    continue
                seen.add(name)
                for user in users[name]:
                    if user in dst:
                        return True
                    stack.append(user)
        return False

    for name in order:
        if not is_supported(name):
            continue
        cid = position[name]  # unique and deterministic
        cluster_of[name], members[cid] = cid, {name}
        node = graph.nodes[name]
        producers = [parse_ref(r)[0] for r in node.inputs] + node.control_inputs
        for producer in producers:
            other = cluster_of.get(producer)
            cid = cluster_of[name]
            if other is None or other == cid or creates_cycle(members[other], members[cid]):
                continue
            keep, gone = (other, cid) if len(members[other]) >= len(members[cid]) else (cid, other)
            moved = members.pop(gone)
            for m in moved:
                cluster_of[m] = keep
            members[keep] |= moved
    def feeds_a_cluster(group: Set[str]) -> bool:
        """Whether another cluster waits on ``group`` (through TF ops): merged, it would wait too."""
        stack, seen = [u for m in group for u in users[m] if u not in group], set()
        while stack:
            name = stack.pop()
            if name in seen or name in group:
                continue
            if name in cluster_of:
                return True
            seen.add(name)
            stack.extend(users[name])
        return False

    merged: List[Set[str]] = []
    mergeable: List[Set[str]] = []  # merged groups no cluster waits on (a union of such stays so)
    for group in sorted(members.values(), key=lambda m: min(map(position.__getitem__, m))):
        if feeds_a_cluster(group):
            merged.append(set(group))
            continue
        for target in mergeable:
            if not creates_cycle(target, group):
                target |= group
                break
        else:
            merged.append(set(group))
            mergeable.append(merged[-1])
    clusters = [sorted(m, key=position.__getitem__) for m in merged]
    return sorted(clusters, key=lambda c: position[c[0]])

"""The pass pipeline and its manager.

Order, and why:
1. inline_calls      - signature bodies hide behind (Stateful)PartitionedCall; clustering must see them.
2. refuse_training   - a graph that computes gradients needs the original ops for their gradients.
   simplify          - Grappler folds what TF's runtime never runs (needs the inlined bodies).
   unguard_asserts   - tf.debugging asserts hide their Assert in an If; unwrapped, it can fuse.
   fold_ranges       - integer Ranges over constants become constants (asserts reduce over them).
   constant_control_edges - control edges on constants and relay NoOps move to their consumers
                       (else the node, never clustered, splits the clusters on either side).
3. freeze_tables     - lookups on static tables become fusable (needs the inlined lookups);
                       the cluster pass puts back any frozen lookup it leaves unfused.
4. cluster           - supported nodes -> cycle-free clusters (needs the inlined, final op set).
5. compile_kernels   - each cluster's kernel is compiled now; one that fails stays TF (needs clusters).
6. fuse              - each cluster -> one fused node (needs the compiled clusters).
7. prune_constants   - constants copied into specs are dead now (last: fusing creates them).
"""
from __future__ import annotations

import collections
import dataclasses
import warnings
from typing import Callable, FrozenSet, List, Optional

from ..graph.inline import inline_calls
from ..codegen.dtypes import STRING, supported
from ..graph.ir import Graph, from_graphdef, make_ref, parse_ref, to_graphdef
from ..runtime.bridge import FUSED_OPS, NUMPY_OPS
from . import fuse
from .freeze_tables import freeze_tables, restore_unfused
from .fold_ranges import fold_ranges
from .constant_control_edges import bypass_relay_noops, move_constant_control_edges
from .partition import partition
from .simplify import simplify
from .unguard_asserts import unguard_asserts
from .support import unsupported_reason


@dataclasses.dataclass
class Options:
    min_cluster_size: int = 2
    allow_ops: Optional[FrozenSet[str]] = None
    deny_ops: FrozenSet[str] = frozenset()


@dataclasses.dataclass
class State:
    graph_def: object
    fetches: List[str]                 # the function's outputs; fusing renames them
    options: Options
    make_fused_node: Callable
    variable_shapes: dict = dataclasses.field(default_factory=dict)
    table_handles: dict = dataclasses.field(default_factory=dict)   # placeholder -> static table
    export_table: Optional[Callable] = None                          # (placeholder, Tin, Tout) -> arrays
    captured_floats: FrozenSet[str] = frozenset()                   # see simplify_pass
    frozen_tables: dict = dataclasses.field(default_factory=dict)   # node name -> original node
    graph: Optional[Graph] = None
    clusters: List[List[str]] = dataclasses.field(default_factory=list)
    report: dict = dataclasses.field(default_factory=dict)


class PassError(RuntimeError):
    pass


def inline_pass(s: State):
    s.graph_def = inline_calls(s.graph_def)
    s.report["tf_ops_before"] = _count_ops(s.graph_def.node)  # the typed graph waits for simplify
    return True


def simplify_pass(s: State):
    # TF's runtime passes captured tensors in as arguments, so its Grappler never folds them; we
    # see them as Consts. Folding float ones would let constfold rewrite x / c as x * (1 / c)
    # where TF divides (one ulp off); integer and string folding is exact and stays.
    s.graph_def = simplify(s.graph_def, {parse_ref(r)[0] for r in s.fetches}, s.captured_floats)
    s.graph = from_graphdef(s.graph_def, s.variable_shapes, s.table_handles)
    return True


_TRAINING_HINTS = ("Grad", "ApplyAdam", "ApplyGradientDescent", "ApplyAdagrad", "ApplyFtrl")


def refuse_training_pass(s: State):
    for node in s.graph_def.node:
        if any(h in node.op for h in _TRAINING_HINTS) or "gradients/" in node.name:
            s.report["left_alone"] = f"training graph: {node.op} {node.name} computes gradients"
            return False
    return True


def unguard_asserts_pass(s: State):
    unguard_asserts(s.graph)
    return True


def fold_ranges_pass(s: State):
    fold_ranges(s.graph)
    return True


def constant_control_edges_pass(s: State):
    move_constant_control_edges(s.graph)
    bypass_relay_noops(s.graph)
    return True


def freeze_tables_pass(s: State):
    if s.table_handles:
        s.frozen_tables = freeze_tables(s.graph, s.table_handles, s.export_table)
    return True


def cluster_pass(s: State):
    graph, options = s.graph, s.options
    refused = collections.Counter()
    blocked = set()
    late = _after_dense_layers(graph)
    while True:
        def ok(name):
            if name in blocked:
                return False
            if name in late:
                # In a feature cluster it would make that cluster wait for the DNN.
                refused[f"{graph.nodes[name].op}: runs after a dense layer"] += 1
                return False
            reason = unsupported_reason(graph.nodes[name], graph, options)
            if reason:
                refused[f"{graph.nodes[name].op}: {reason}"] += 1
            return reason is None
        refused.clear()
        clusters = partition(graph, ok)
        # A string or resource value cannot leave a fused op: keep its producer in TF and retry.
        leaking = _nodes_with_unexportable_outputs(graph, clusters, s.fetches)
        if not leaking:
            break
        blocked |= leaking
    s.clusters = [c for c in clusters if _weight(graph, c) >= options.min_cluster_size]
    restore_unfused(graph, s.frozen_tables, s.clusters)
    s.report["not_fused"] = dict(sorted((k, v) for k, v in refused.items() if not k.startswith("Const")))
    return bool(s.clusters)


def compile_pass(s: State):
    """Compiles every cluster's kernel before any graph changes: a kernel that fails to compile
    leaves its cluster to TensorFlow (reported, warned once) instead of failing a request later.
    It also fills the kernel cache, so the first call of the optimized model is quick."""
    from ..runtime import compiler
    kept = []
    for cluster in s.clusters:
        spec = fuse.build_spec(s.graph, cluster, s.fetches)[0]
        try:
            compiler.load_kernel(fuse.spec_text(spec))
            kept.append(cluster)
        except Exception as e:  # any failure of codegen or Numba: the TF ops still work
            reason = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
            s.report.setdefault("compile_failed", []).append({"tf_ops": len(cluster), "reason": reason})
            warnings.warn(f"tf_blade: a cluster of {len(cluster)} TF ops stays unfused, its kernel "
                          f"failed to compile: {reason}", RuntimeWarning)
    s.clusters = kept
    return bool(kept)


def fuse_pass(s: State):
    fused = []
    for i, cluster in enumerate(s.clusters):
        op_types = collections.Counter(s.graph.nodes[m].op for m in cluster)
        name = s.graph.unique_name(f"blade_cluster_{i}")
        node, renamed = fuse.replace_cluster(s.graph, cluster, name, s.make_fused_node, s.fetches, s.frozen_tables)
        s.fetches = [renamed.get(r, r) for r in s.fetches]
        fused.append({"name": name, "op": node.op, "tf_ops": len(cluster), "op_types": dict(op_types)})
    s.report["clusters"] = fused
    return bool(fused)


def prune_constants_pass(s: State):
    fuse.prune_dead_constants(s.graph, keep={parse_ref(r)[0] for r in s.fetches})
    return True


PIPELINE = [
    ("inline_calls", inline_pass),
    ("refuse_training", refuse_training_pass),
    ("simplify", simplify_pass),
    ("unguard_asserts", unguard_asserts_pass),
    ("fold_ranges", fold_ranges_pass),
    ("constant_control_edges", constant_control_edges_pass),
    ("freeze_tables", freeze_tables_pass),
    ("cluster", cluster_pass),
    ("compile_kernels", compile_pass),
    ("fuse", fuse_pass),
    ("prune_constants", prune_constants_pass),
]


def run_pipeline(graph_def, fetches, options: Options, make_fused_node, variable_shapes=None,
                 table_handles=None, export_table=None, captured_floats=()):
    """Returns (rewritten GraphDef, report, the outputs' new names). Stops early when a pass
    finds nothing to do. ``table_handles``/``export_table``: the static tables whose lookups may
    be frozen (see passes/freeze_tables.py). ``captured_floats``: Const nodes holding captured
    float tensors (see simplify_pass)."""
    s = State(graph_def=graph_def, fetches=[make_ref(*parse_ref(f)) for f in fetches], options=options,
              make_fused_node=make_fused_node, variable_shapes=dict(variable_shapes or {}),
              table_handles=dict(table_handles or {}), export_table=export_table,
              captured_floats=frozenset(captured_floats))
    for name, run in PIPELINE:
        try:
            go_on = run(s)
        except Exception as e:
            raise PassError(f"tf_blade pass '{name}' failed: {e}") from e
        if not go_on:
            break
    if s.graph is None:
        s.graph = from_graphdef(s.graph_def, s.variable_shapes, s.table_handles)
    s.report["tf_ops_after"] = _count_ops(s.graph.nodes.values())
    s.report.setdefault("clusters", [])
    return to_graphdef(s.graph), s.report, s.fetches


_DENSE_LAYER_OPS = {"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D", "_FusedMatMul"}


def _after_dense_layers(graph: Graph):
    """Nodes that (transitively) read the output of a matmul or convolution."""
    users = graph.consumers()
    late, stack = set(), [n for n, node in graph.nodes.items() if node.op in _DENSE_LAYER_OPS]
    while stack:
        for user in users[stack.pop()]:
            if user not in late:
                late.add(user)
                stack.append(user)
    return late


def _count_ops(nodes) -> int:
    """Ops that do work: placeholders, constants and no-ops are not counted."""
    return sum(1 for n in nodes
               if n.op not in ("Placeholder", "Const", "NoOp") + FUSED_OPS + NUMPY_OPS)


def _weight(graph: Graph, cluster) -> int:
    return sum(1 for name in cluster if graph.nodes[name].op not in ("Identity",))


def _nodes_with_unexportable_outputs(graph: Graph, clusters, fetches):
    leaking = set()
    fetched = set(fetches)
    users = graph.consumers()
    for cluster in clusters:
        members = set(cluster)
        for name in cluster:
            node = graph.nodes[name]
            outside = [graph.nodes[u] for u in users[name] if u not in members]
            for j, dtype in enumerate(node.out_dtypes):
                ref = make_ref(name, j)
                if not supported(dtype) or dtype == STRING:
                    if ref in fetched or any(ref in u.inputs for u in outside):
                        leaking.add(name)
    return leaking

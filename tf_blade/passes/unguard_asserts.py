"""Unwraps the If that guards each tf.debugging assert, so the check can join a fused cluster.

In a tf.function, ``tf.debugging.assert_*`` builds an "AssertGuard": ``If(cond, then: pass the
inputs through, else: Assert(cond, data))``. Assert does nothing when its condition holds, and an
If computes its inputs before either branch runs, so ``Assert(cond, data)`` in the graph itself
is the same computation. The If becomes an Identity of the value its branches pass through,
ordered after the Assert, under the If's own name (its consumers and control edges keep working).
Any other If is left alone.
"""
from __future__ import annotations

from tensorflow.core.framework import attr_value_pb2
from tensorflow.python.framework import tensor_util

from ..codegen.dtypes import BOOL
from ..graph.attrs import attr_to_py
from ..graph.ir import Graph, Node

_IF_OPS = ("If", "StatelessIf")
_PLUMBING = ("Identity", "NoOp")


def unguard_asserts(graph: Graph) -> int:
    """Rewrites every AssertGuard in ``graph``; returns how many."""
    if graph.library is None:
        return 0
    functions = {f.signature.name: f for f in graph.library.function}
    count = 0
    for node in [n for n in graph.nodes.values() if n.op in _IF_OPS]:
        then_fn = functions.get(node.attrs.get("then_branch"))
        else_fn = functions.get(node.attrs.get("else_branch"))
        if then_fn is None or else_fn is None or len(node.out_dtypes) != 1 or graph.dtype_of(node.inputs[0]) != BOOL:
            continue
        passed = _passthrough(then_fn)
        found = _guarded_assert(else_fn)
        if passed is None or found is None or passed != _passthrough(else_fn, allow_assert=True):
            continue
        assert_def, data = found
        _rewrite(graph, node, assert_def, data, passed)
        count += 1
    return count


def _arg_of(fdef, ref: str, nodes) -> int | None:
    """Which argument ``ref`` (a function-body reference) forwards, through Identity nodes."""
    args = [a.name for a in fdef.signature.input_arg]
    seen = 0
    while seen < 64:
        name = ref.split(":")[0]
        if name in args:
            return args.index(name)
        nd = nodes.get(name)
        if nd is None or nd.op != "Identity":
            return None
        ref, seen = nd.input[0], seen + 1
    return None


def _passthrough(fdef, allow_assert=False) -> int | None:
    """The argument a branch returns unchanged, if it is all plumbing and returns one value."""
    nodes = {nd.name: nd for nd in fdef.node_def}
    allowed = _PLUMBING + (("Assert", "Const") if allow_assert else ())
    if any(nd.op not in allowed for nd in nodes.values()) or len(fdef.signature.output_arg) != 1:
        return None
    return _arg_of(fdef, fdef.ret[fdef.signature.output_arg[0].name], nodes)


def _guarded_assert(fdef):
    """(the Assert node, its data as ("arg", index) or ("const", NodeDef)) when the branch is
    exactly one Assert on its first argument."""
    nodes = {nd.name: nd for nd in fdef.node_def}
    asserts = [nd for nd in nodes.values() if nd.op == "Assert"]
    if len(asserts) != 1 or _arg_of(fdef, asserts[0].input[0], nodes) != 0:
        return None
    data = []
    for ref in asserts[0].input[1:]:
        if ref.startswith("^"):
            return None
        arg = _arg_of(fdef, ref, nodes)
        producer = nodes.get(ref.split(":")[0])
        if arg is not None:
            data.append(("arg", arg))
        elif producer is not None and producer.op == "Const":
            data.append(("const", producer))
        else:
            return None
    return asserts[0], data


def _rewrite(graph: Graph, guard: Node, assert_def, data, passed: int):
    branch_inputs = guard.inputs[1:]  # the branches' arguments
    refs = []
    for kind, what in data:
        if kind == "arg":
            refs.append(branch_inputs[what])
            continue
        refs.append(graph.add_const(f"{guard.name}/{what.name}", tensor_util.MakeNdarray(what.attr["value"].tensor)))
    name = graph.unique_name(f"{guard.name}/Assert")
    types = attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(type=[graph.dtype_of(r) for r in refs]))
    summarize = assert_def.attr["summarize"]
    graph.nodes[name] = Node(name=name, op="Assert", inputs=[guard.inputs[0]] + refs,
                             control_inputs=list(guard.control_inputs),
                             attrs={"T": attr_to_py(types), "summarize": attr_to_py(summarize)},
                             raw_attrs={"T": types, "summarize": summarize}, device=guard.device)
    source = branch_inputs[passed]
    graph.nodes[guard.name] = Node(
        name=guard.name, op="Identity", inputs=[source], control_inputs=[name],
        attrs={"T": graph.dtype_of(source)}, raw_attrs={"T": attr_value_pb2.AttrValue(type=graph.dtype_of(source))},
        device=guard.device, out_dtypes=[graph.dtype_of(source)], out_ranks=[graph.rank_of(source)])

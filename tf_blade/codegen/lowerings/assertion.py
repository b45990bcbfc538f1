"""Assert (what tf.debugging.assert_* leave once passes/unguard_asserts.py unwraps their If): the
fused op fails with TF's "assertion failed: [..] [..]" when the condition is false. Data may be
scalar string constants (the messages) and integer tensors of rank 0 or 1."""
from ...feature_column.spec import producer
from ..dtypes import BOOL, INT32_64, STRING
from ..parts import text_refs
from ..registry import Lowering, lowering
from .const import const_array


@lowering("Assert")
class AssertLowering(Lowering):
    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) != BOOL or graph.rank_of(node.inputs[0]) != 0:
            return "condition is not a boolean scalar"
        for ref in node.inputs[1:]:
            dtype, rank = graph.dtype_of(ref), graph.rank_of(ref)
            if dtype == STRING and not (graph.producer(ref).op == "Const" and rank == 0):
                return "string data that is not a constant message"
            if dtype != STRING and (dtype not in INT32_64 or rank is None or rank > 1):
                return "data other than int32/int64 scalars and vectors (TF's float printing)"
        return None

    string_consts_are_texts = True  # tf.debugging's messages quote tensor names: each model's own

    def texts(self, raw, spec):
        return [const_array(producer(spec, ref)[0]["attrs"]["value"]).ravel()[0].decode("utf-8", "replace")
                for ref in raw["inputs"][1:] if ref in text_refs(spec, raw)]

    def emit(self, node, ins, em):
        limit = node.attrs.get("summarize", 3)
        texts = iter(node.attrs["texts"])
        parts = ["assertion failed: "]  # literal text is one constant of the message (errors.set_error)
        for i, value in enumerate(ins[1:]):
            parts[-1] += (" [" if i > 0 else "[")
            if value is None or value.is_string:  # a string constant (in the part if others read it): one of texts()
                parts += [f"{em.kernel('errors', 'text')}({next(texts)})", "]"]
            else:
                parts += [f"{em.kernel('assertion', 'summarize')}({value.var}.ravel(), {limit})", "]"]
        message = ", ".join(repr(p) if i % 2 == 0 else p for i, p in enumerate(parts))
        em.line(f"if not {ins[0].var}[0]:")
        em.line(f"    {em.kernel('errors', 'set_error')}(err, {message})")
        em.check()
        return []

"""Log1p of float32 with TF's bits (kernels/log1p.py: Eigen's AVX packets, then libm for the last
n % 8 elements of the tensor).

Which path an element takes depends on the tensor TF's kernel sees, so a Log1p is fused only
where TF's runtime runs it on the same tensor: not where Grappler would hoist it across a Concat
or Split (_common.GRAPPLER_UNARY; the Concat stays TF's too). And only where TF on this machine
computes what the kernel does: checked once per process on probe values.
"""
import functools

import numpy as np

from ..dtypes import FLOAT32
from ..registry import Lowering, lowering
from ._common import GRAPPLER_UNARY, grappler_hoists_into, unary_chain


@functools.lru_cache(maxsize=1)
def tf_matches_kernel() -> bool:
    """Whether TF's Log1p on this machine gives the kernel's bits: 1003 values (125 packets and a
    tail), where Eigen's packets, libm and an FMA build all disagree somewhere."""
    import tensorflow as tf

    from ...kernels.log1p import log1p_float32
    probe = np.random.default_rng(0).uniform(-0.99, 1000.0, 1003).astype(np.float32)
    want = tf.math.log1p(tf.constant(probe)).numpy()
    return bool(np.array_equal(want.view(np.uint32), log1p_float32(probe).view(np.uint32)))


def _hoistable(node, graph) -> bool:
    """Whether TF's Grappler may run ``node`` on another tensor: a Concat it would hoist it
    across is downstream through unary ops, or a Split is upstream (Split is always TF's)."""
    users = graph.consumers()
    todo, seen = [node.name], set()
    while todo:
        for user in users[todo.pop()]:
            op = graph.nodes[user].op
            if op == "Concat" or op == "ConcatV2" and grappler_hoists_into(graph.nodes[user], graph):
                return True
            if op in GRAPPLER_UNARY and user not in seen:
                seen.add(user)
                todo.append(user)
    return unary_chain(graph, node.inputs[0])[1].op in ("Split", "SplitV")


@lowering("Log1p")
class Log1pLowering(Lowering):
    elementwise = True

    def check(self, node, graph):
        if graph.dtype_of(node.inputs[0]) != FLOAT32:
            return "float32 only (float64's packets are another algorithm)"
        if _hoistable(node, graph):
            return "next to a Concat or Split through unary ops (TF's Grappler hoists Log1p across it)"
        if not tf_matches_kernel():
            return "TF's Log1p on this machine is not the x86 AVX kernel this one reproduces"
        return None

    def emit(self, node, ins, em):
        x = ins[0]
        (flat,) = em.call(1, f"{em.kernel('log1p', 'log1p_float32')}(np.ascontiguousarray({x.var}).ravel())", False)
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape({x.var}.shape)")
        return [out]

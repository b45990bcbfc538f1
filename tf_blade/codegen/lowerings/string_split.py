"""StringSplitV2 (``tf.strings.split``, tags fields "a|b|c"): kernels/string_split.py. Its tokens
stay inside the fused op as views of the input's bytes, read by what follows (hashing, lookups)."""
from ..registry import Lowering, lowering


@lowering("StringSplitV2")
class StringSplitV2Lowering(Lowering):
    def check(self, node, graph):
        if graph.rank_of(node.inputs[0]) != 1 or graph.rank_of(node.inputs[1]) != 0:
            return "input must be a vector and sep a scalar (TF raises)"
        if not -2**31 <= node.attrs.get("maxsplit", -1) < 2**31:
            return "maxsplit outside int32 (TF cannot build its kernel)"
        return None

    def emit(self, node, ins, em):
        s, sep = ins
        maxsplit = int(node.attrs.get("maxsplit", -1))
        k = em.kernel("string_split", "string_split_v2")
        indices, tokens, shape = em.call(
            3, f"{k}(np.ascontiguousarray({s.var}).ravel(), {s.off}, {s.dat}, {sep.var}, {sep.off}, {sep.dat}, {em.int64(maxsplit)})",
            False)
        return [indices, em.made_strings(tokens, f"np.arange({indices}.shape[0])", em.bytes_owner(s)), shape]

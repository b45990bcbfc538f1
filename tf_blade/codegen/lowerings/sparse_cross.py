"""SparseCross with hashed output (crossed_column, HashedCrossing) over int64 and string
inputs, sparse and dense: inputs are N indices, N values, N shapes, then the dense inputs."""
from ..registry import Lowering, lowering


@lowering("SparseCross")
class SparseCrossLowering(Lowering):
    def check(self, node, graph):
        a = node.attrs
        if not a.get("hashed_output") or a.get("out_type") != 9:
            return "only hashed crosses (int64 output)"
        n = a.get("N", 0)
        if any(graph.rank_of(r) != (2, 1, 1)[k // n] for k, r in enumerate(node.inputs[:3 * n])):
            return "indices, values or shapes of a rank TF rejects (TF raises)"
        if any(graph.rank_of(r) != 2 for r in node.inputs[3 * n:]):
            return "dense inputs must be matrices (TF raises)"
        if n == 0 and len(node.inputs) == 0:
            return "nothing to cross"
        return None

    def emit(self, node, ins, em):
        n = node.attrs["N"]
        indices, values, shapes, dense = ins[:n], ins[n:2 * n], ins[2 * n:3 * n], ins[3 * n:]
        k = lambda f: em.kernel("sparse_cross", f)
        if n:
            (batch,) = em.call(1, f"{k('batch_size')}({shapes[0].var}, err)", True)
        else:
            (batch,) = em.call(1, f"np.int64({dense[0].var}.shape[0])", False)
        features, counts, starts = [], [], []
        for i in range(n):
            em.call(0, f"{k('check_sparse')}({i}, {indices[i].var}, {values[i].var}.shape[0], {shapes[i].var}, {batch}, err)", True)
        for i, d in enumerate(dense):
            em.call(0, f"{k('check_dense')}({i}, {d.var}.shape[0], {batch}, err)", True)
        for i in range(n):
            c, s = em.call(2, f"{k('sparse_rows')}({indices[i].var}, {batch}, err)", True)
            features.append(_features(values[i], em))
            counts.append(c)
            starts.append(s)
        for d in dense:
            c, s = em.call(2, f"{k('dense_rows')}({batch}, {d.var}.shape[1])", False)
            features.append(_features(d, em))
            counts.append(c)
            starts.append(s)
        tup = lambda xs: "(" + ", ".join(xs) + ",)"
        return em.call(3, f"{k('cross_hashed')}({tup(features)}, {tup(counts)}, {tup(starts)}, {batch}, "
                          f"{node.attrs['num_buckets']}, {node.attrs['hash_key']}, err)", True)


def _features(value, em):
    if value.is_string:
        (out,) = em.call(1, f"{em.kernel('sparse_cross', 'string_features')}({value.var}, {value.off}, {value.dat})", False)
    else:
        (out,) = em.call(1, f"{em.kernel('sparse_cross', 'int_features')}({value.var})", False)
    return out

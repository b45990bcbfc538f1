"""SparseCross with hashed output (crossed_column, HashedCrossing) and SparseCrossHashed, over
int64 and string inputs, sparse and dense: inputs are N indices, N values, N shapes, then the
dense inputs (then, for SparseCrossHashed, the constants num_buckets, strong_hash and salt)."""
from ..registry import Lowering, lowering
from ._common import const_input, const_value


def _ranks_reason(node, graph, n, n_columns_inputs):
    if any(graph.rank_of(r) != (2, 1, 1)[k // n] for k, r in enumerate(node.inputs[:3 * n])):
        return "indices, values or shapes of a rank TF rejects (TF raises)"
    if any(graph.rank_of(r) != 2 for r in node.inputs[3 * n:n_columns_inputs]):
        return "dense inputs must be matrices (TF raises)"
    if n_columns_inputs == 0:
        return "nothing to cross"
    return None


@lowering("SparseCross")
class SparseCrossLowering(Lowering):
    def check(self, node, graph):
        a = node.attrs
        if not a.get("hashed_output") or a.get("out_type") != 9:
            return "only hashed crosses (int64 output)"
        return _ranks_reason(node, graph, a.get("N", 0), len(node.inputs))

    def emit(self, node, ins, em):
        features = lambda v, dense: _features(v, em)  # noqa: E731
        return _cross(node, ins, em, features, f"{node.attrs['num_buckets']}, {node.attrs['hash_key']}, False")


@lowering("SparseCrossHashed")
class SparseCrossHashedLowering(Lowering):
    def check(self, node, graph):
        n = node.attrs.get("N", 0)
        for position in range(len(node.inputs) - 3, len(node.inputs)):
            reason = const_input(graph, node, position)
            if reason:
                return reason
        if const_value(graph, node.inputs[-1]).size != 2:
            return "salt must have 2 elements (TF raises)"
        return _ranks_reason(node, graph, n, len(node.inputs) - 3)

    def emit(self, node, ins, em):
        buckets = int(ins[-3].const.ravel()[0])
        strong = bool(ins[-2].const.ravel()[0])
        k0, k1 = (int(v) & 0xFFFFFFFFFFFFFFFF for v in ins[-1].const.ravel())  # the int64 salt as uint64s
        keyed = f"{strong}, np.uint64({k0}), np.uint64({k1})"

        def features(v, dense):
            kernel = em.kernel("sparse_cross", "keyed_string_features" if v.is_string else "keyed_int_features")
            args = f"{v.var}, {v.off}, {v.dat}, {keyed}" if v.is_string else f"{v.var}, {keyed}, {dense}"
            return em.call(1, f"{kernel}({args})", False)[0]
        return _cross(node, ins[:-3], em, features, f"{buckets}, 0, True")


def _cross(node, ins, em, features_of, tail):
    """Validates TF's way, finds each row's features per column and crosses them."""
    n = node.attrs["N"]
    indices, values, shapes, dense = ins[:n], ins[n:2 * n], ins[2 * n:3 * n], ins[3 * n:]
    k = lambda f: em.kernel("sparse_cross", f)  # noqa: E731
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
        features.append(features_of(values[i], False))
        counts.append(c)
        starts.append(s)
    for d in dense:
        c, s = em.call(2, f"{k('dense_rows')}({batch}, {d.var}.shape[1])", False)
        features.append(features_of(d, True))
        counts.append(c)
        starts.append(s)
    tup = lambda xs: "(" + ", ".join(xs) + ",)"  # noqa: E731
    return em.call(3, f"{k('cross_hashed')}({tup(features)}, {tup(counts)}, {tup(starts)}, {batch}, {tail}, err)", True)


def _features(value, em):
    if value.is_string:
        kernel = em.kernel("sparse_cross", "keyed_string_features")
        (out,) = em.call(1, f"{kernel}({value.var}, {value.off}, {value.dat}, False, np.uint64(0), np.uint64(0))", False)
    else:
        (out,) = em.call(1, f"{em.kernel('sparse_cross', 'int_features')}({value.var})", False)
    return out

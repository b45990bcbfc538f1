"""SparseCross (hashed: crossed_column, HashedCrossing; or strings), SparseCrossHashed and
SparseCrossV2 (``tf.sparse.cross``), over int64 and string inputs, sparse and dense: inputs are N
indices, N values, N shapes, then the dense inputs (then SparseCrossHashed's constants
num_buckets, strong_hash and salt, or SparseCrossV2's separator)."""
from ...kernels.strings import tstrings_from_bytes
from ..dtypes import STRING
from ..registry import Lowering, lowering
from ._common import const_input, const_value, part_tables_call

V1_SEPARATOR = b"_X_"  # SparseCross' string crosses join with this fixed separator


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
    runtime_attrs = ("num_buckets",)  # crossed columns of other sizes share a template

    def check(self, node, graph):
        a = node.attrs
        n = a.get("N", 0)
        if a.get("hashed_output") != (a.get("out_type") == 9):
            return "out_type does not match hashed_output (TF has no such kernel)"
        values = node.inputs[n:2 * n] + node.inputs[3 * n:]
        if a.get("internal_type") == STRING and any(
                graph.dtype_of(r) != STRING for r in values):
            return "int64 values with internal_type string (TF raises)"
        return _ranks_reason(node, graph, n, len(node.inputs))

    def emit(self, node, ins, em):
        if not node.attrs["hashed_output"]:
            return _cross_strings(node, ins, em, V1_SEPARATOR)
        features = lambda v, dense: _features(v, em)  # noqa: E731
        return _cross(node, ins, em, features, f"{node.attrs['num_buckets']}, {em.int64(node.attrs['hash_key'])}, False")


@lowering("SparseCrossV2")
class SparseCrossV2Lowering(Lowering):
    def check(self, node, graph):
        reason = const_input(graph, node, len(node.inputs) - 1)
        if reason:
            return reason
        if const_value(graph, node.inputs[-1]).ndim != 0:
            return "separator must be a scalar (TF raises)"
        return _ranks_reason(node, graph, node.attrs.get("N", 0), len(node.inputs) - 1)

    def emit(self, node, ins, em):
        return _cross_strings(node, ins[:-1], em, ins[-1].const.item())


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

    def const_is_value(self, raw, index, value):
        return index == len(raw["inputs"]) - 3  # the bucket count: crosses of other sizes share a template

    def emit(self, node, ins, em):
        buckets = f"np.int64({ins[-3].var}[0])"  # a scalar: a shape-(1,) array
        strong = bool(ins[-2].const.ravel()[0])
        k0, k1 = (int(v) & 0xFFFFFFFFFFFFFFFF for v in ins[-1].const.ravel())  # the int64 salt as uint64s
        keyed = f"{strong}, np.uint64({k0}), np.uint64({k1})"

        def features(v, dense):
            kernel = em.kernel("sparse_cross", "keyed_string_features" if v.is_string else "keyed_int_features")
            args = f"{v.var}, {v.off}, {v.dat}, {keyed}" if v.is_string else f"{v.var}, {keyed}, {dense}"
            return em.call(1, f"{kernel}({args})", False)[0]
        return _cross(node, ins[:-3], em, features, f"{buckets}, {em.int64(0)}, True")


def _rows(node, ins, em):
    """Validates TF's way and finds each column's features per row: (batch, counts, starts,
    [(values, dense)] per column, sparse columns first)."""
    n = node.attrs["N"]
    indices, values, shapes, dense = ins[:n], ins[n:2 * n], ins[2 * n:3 * n], ins[3 * n:]
    k = lambda f: em.kernel("sparse_cross", f)  # noqa: E731
    if n:
        (batch,) = em.call(1, f"{k('batch_size')}({shapes[0].var}, err)", True)
    else:
        (batch,) = em.call(1, f"np.int64({dense[0].var}.shape[0])", False)
    counts, starts = [], []
    for i in range(n):
        em.call(0, f"{k('check_sparse')}({em.int64(i)}, {indices[i].var}, {values[i].var}.shape[0], {shapes[i].var}, {batch}, err)", True)
    for i, d in enumerate(dense):
        em.call(0, f"{k('check_dense')}({em.int64(i)}, {d.var}.shape[0], {batch}, err)", True)
    for i in range(n):
        c, s = em.call(2, f"{k('sparse_rows')}({indices[i].var}, {batch}, err)", True)
        counts.append(c)
        starts.append(s)
    for d in dense:
        c, s = em.call(2, f"{k('dense_rows')}({batch}, {d.var}.shape[1])", False)
        counts.append(c)
        starts.append(s)
    columns = [(v, False) for v in values] + [(d, True) for d in dense]
    return batch, counts, starts, columns


def _cross(node, ins, em, features_of, tail):
    batch, counts, starts, columns = _rows(node, ins, em)
    features = [features_of(v, dense) for v, dense in columns]
    return part_tables_call(em, 3, em.kernel("sparse_cross", "cross_hashed"), [features, counts, starts], f"{batch}, {tail}")


def _cross_strings(node, ins, em, separator: bytes):
    batch, counts, starts, columns = _rows(node, ins, em)
    ids, pools = [], []
    for v, _ in columns:
        flat = f"np.ascontiguousarray({v.var}).ravel()"
        if v.is_string:
            ids.append(flat)
            pools.append(f"np.ascontiguousarray({v.off})")
        else:  # std::to_string: AsString's default format
            (text,) = em.call(1, f"{em.kernel('as_string', 'as_string_ints')}({flat}, {em.int64(-1)}, {em.int64(0)}, err)", True)
            ids.append(f"np.arange({v.var}.size)")
            pools.append(text)
    sep = em.const(tstrings_from_bytes([separator]))
    indices, text, shape = part_tables_call(em, 3, em.kernel("sparse_cross", "cross_strings"), [ids, pools, counts, starts],
                                            f"{batch}, {sep}")
    return [indices, em.made_strings(text, f"np.arange({indices}.shape[0])"), shape]


def _features(value, em):
    if value.is_string:
        kernel = em.kernel("sparse_cross", "keyed_string_features")
        (out,) = em.call(1, f"{kernel}({value.var}, {value.off}, {value.dat}, False, np.uint64(0), np.uint64(0))", False)
    else:
        (out,) = em.call(1, f"{em.kernel('sparse_cross', 'int_features')}({value.var})", False)
    return out

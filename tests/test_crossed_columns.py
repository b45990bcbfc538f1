"""Hashed crosses (kernels/sparse_cross.py): crossed_column over string and int64 columns,
sparse and dense, against TF's SparseCross, bit-exact, and SparseCrossHashed (fingerprint and
SipHash features); the bad inputs TF rejects (and the
advisory-style malformed ones: indices out of order or out of range, a negative or mismatched
batch) give InvalidArgumentError or TF's own result, never a crash."""
import numpy as np
import pytest
import tensorflow as tf

import tf_blade
from conftest import error_core, op_counts

FC = tf.feature_column
R = tf.raw_ops


@pytest.fixture(scope="module")
def crossed():
    import tf_keras
    cross = FC.crossed_column(["s", "i", FC.bucketized_column(FC.numeric_column("p"), [0.0, 1.0])], 1000)
    module = tf.Module()
    module.layer = tf_keras.layers.DenseFeatures([FC.embedding_column(cross, 4), FC.indicator_column(
        FC.crossed_column(["s", "i"], 7))])
    specs = {"s": tf.SparseTensorSpec([None, None], tf.string), "i": tf.TensorSpec([None, 2], tf.int64),
             "p": tf.TensorSpec([None, 1], tf.float32)}
    module.serve = tf.function(lambda x: module.layer(x), input_signature=[specs])
    module.serve.get_concrete_function()
    return module, tf_blade.optimize(module)


def _batch(rng, n):
    counts = rng.integers(0, 4, n)
    rows = np.repeat(np.arange(n), counts)
    cols = np.concatenate([np.arange(c) for c in counts]) if n else np.zeros(0, int)
    words = np.array([b"a", b"b", "\u00e9".encode(), b"x" * 50], dtype=object)
    s = tf.SparseTensor(np.stack([rows, cols], 1).astype(np.int64).reshape(-1, 2),
                        tf.constant(words[rng.integers(0, 4, len(rows))] if len(rows) else np.zeros(0, object), tf.string),
                        [n, max(int(counts.max()) if n else 0, 1)])
    ints = rng.integers(-5, 5, (n, 2))
    ints[rng.random((n, 2)) < 0.2] = -1  # dropped as missing
    ints[:, 0][rng.random(n) < 0.1] = 2**63 - 1
    return {"s": s, "i": tf.constant(ints, tf.int64),
            "p": tf.constant(rng.choice([-1.0, 0.5, 3.0], (n, 1)).astype(np.float32))}


def test_crosses_fuse(crossed):
    _, opt = crossed
    counts = op_counts(opt.signatures["serve"])
    assert counts["BladeFusedCall"] == 1 and "SparseCross" not in counts, counts


@pytest.mark.parametrize("n", [0, 1, 50])
def test_crossed_columns_match_tensorflow(crossed, rng, n):
    module, opt = crossed
    x = _batch(rng, n)
    flat = tf.nest.flatten(x, expand_composites=True)
    np.testing.assert_array_equal(module.serve(x).numpy(), opt.signatures["serve"](*flat).numpy())


def _raw_cross(indices, values, shapes, dense):
    return R.SparseCross(indices=indices, values=values, shapes=shapes, dense_inputs=dense, hashed_output=True,
                         num_buckets=100, hash_key=7, out_type=tf.int64, internal_type=tf.int64)


@tf.function(input_signature=[tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.int64),
                              tf.TensorSpec([None], tf.int64), tf.TensorSpec([None, None], tf.string)])
def raw(indices, values, shape, dense):
    out = _raw_cross([indices], [values], [shape], [dense])
    return {"indices": out.output_indices, "values": out.output_values, "shape": out.output_shape}


@pytest.fixture(scope="module")
def fused_raw():
    return tf_blade.optimize(raw, min_cluster_size=1).signatures["serving_default"]


@pytest.mark.parametrize("case", [
    ([[0, 0], [0, 1], [1, 0]], [5, 6, 7], [2, 2], 2),     # valid
    ([[1, 0], [0, 0], [1, 1]], [5, 6, 7], [2, 2], 2),     # unsorted: TF reads runs only
    ([[0, 0], [7, 0]], [5, 6], [2, 9], 2),                # a row outside the batch
    ([[-1, 0], [0, 0]], [5, 6], [2, 3], 2),               # a negative row
    ([[0, 0]], [5, 6], [2, 2], 2),                        # values longer than indices
    ([[0, 0]], [5], [2, 2, 2], 2),                        # a 3-D shape
    ([[0, 0]], [5], [3, 2], 2),                           # batch differs from the dense input
    ([[0, 0]], [5], [-2, 2], 0),                          # negative batch (TF aborts; we refuse)
])
def test_malformed_inputs(fused_raw, case):
    indices, values, shape, dense_rows = case
    args = (tf.constant(indices, tf.int64), tf.constant(values, tf.int64), tf.constant(shape, tf.int64),
            tf.constant([[b"u", b"v"]] * dense_rows, tf.string) if dense_rows else tf.zeros([0, 2], tf.string))
    if shape[0] < 0:
        with pytest.raises(tf.errors.InvalidArgumentError):
            fused_raw(*args)
        return
    try:
        want = {k: v.numpy() for k, v in raw(*args).items()}
    except tf.errors.InvalidArgumentError as e:
        with pytest.raises(tf.errors.InvalidArgumentError) as ours:
            fused_raw(*args)
        assert error_core(e.message) == error_core(ours.value.message)
        return
    got = fused_raw(*args)
    for k, v in want.items():
        np.testing.assert_array_equal(got[k].numpy(), v, err_msg=k)


@pytest.fixture(scope="module", params=[False, True], ids=["fingerprint", "strong"])
def hashed_v2(request):
    strong = request.param

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([2], tf.int64), tf.TensorSpec([None, 2], tf.int64),
                                  tf.TensorSpec([None], tf.int64), tf.TensorSpec([None, 3], tf.string)])
    def cross(s_idx, s_val, s_shape, i_idx, i_val, dense):
        # TF 2.21 segfaults on a dense int64 input with strong_hash: only the fingerprint run has one
        dense_inputs = [dense] if strong else [dense, tf.strings.to_number(dense, tf.int64)]
        out = R.SparseCrossHashed(indices=[s_idx, i_idx], values=[s_val, i_val], shapes=[s_shape, s_shape],
                                  dense_inputs=dense_inputs,
                                  num_buckets=tf.constant(0 if strong else 97, tf.int64),
                                  strong_hash=tf.constant(strong), salt=tf.constant([7, -(2**60)], tf.int64))
        return {"indices": out.output_indices, "values": out.output_values, "shape": out.output_shape}
    fused = tf_blade.optimize(cross, bridge="native", min_cluster_size=1).signatures["serving_default"]
    assert "SparseCrossHashed" not in op_counts(fused) and op_counts(fused)["BladeFusedCall"] == 1
    return cross, fused


@pytest.mark.parametrize("n", [0, 1, 9])
def test_sparse_cross_hashed_matches_tensorflow(hashed_v2, rng, n):
    # int64 features hash their first 4 bytes only, so ids differing above bit 31 must collide as in TF
    cross, fused = hashed_v2
    counts = rng.integers(0, 3, n)
    rows = np.repeat(np.arange(n), counts)
    cols = np.concatenate([np.arange(c) for c in counts]) if n else np.zeros(0, int)
    idx = np.stack([rows, cols], 1).astype(np.int64).reshape(-1, 2)
    words = np.array([b"", b"a", "\u00e9".encode(), b"x" * 70], dtype=object)
    ints = np.array([0, -1, 5, 5 + (1 << 40), 2**63 - 1, -2**63])
    args = (idx, words[rng.integers(0, 4, len(rows))].astype(object), np.array([n, 3]), idx,
            ints[rng.integers(0, 6, len(rows))], np.array(["1", "-7", "123456789012"], dtype=object)[rng.integers(0, 3, (n, 3))])
    args = [tf.constant(a, tf.string if a.dtype == object else tf.int64) for a in args]
    want, got = cross(*args), fused(*args)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


# String crosses: SparseCrossV2 (tf.sparse.cross) and SparseCross without hashing. A string cannot
# leave a fused op, so the crosses feed a 2**62-bucket hash (their exact bytes) and a length-free
# kernel test checks the bytes themselves.

def _string_cross_inputs(rng, n):
    counts = rng.integers(0, 3, n)
    rows = np.repeat(np.arange(n), counts)
    cols = np.concatenate([np.arange(c) for c in counts]) if n else np.zeros(0, int)
    idx = np.stack([rows, cols], 1).astype(np.int64).reshape(-1, 2)
    words = np.array([b"", b"a", "\u00e9".encode(), b"x" * 30], dtype=object)
    ints = np.array([0, -1, 42, 2**63 - 1, -2**63])
    args = (idx, words[rng.integers(0, 4, len(rows))].astype(object), np.array([n, 3]), idx,
            ints[rng.integers(0, 5, len(rows))], np.array([b"p", b"q" * 20], dtype=object)[rng.integers(0, 2, (n, 2))],
            ints[rng.integers(0, 5, (n, 1))])
    return [tf.constant(a, tf.string if a.dtype == object else tf.int64) for a in args]


_STRING_CROSS_SPEC = [tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.string), tf.TensorSpec([2], tf.int64),
                      tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.int64),
                      tf.TensorSpec([None, 2], tf.string), tf.TensorSpec([None, 1], tf.int64)]


@pytest.fixture(scope="module", params=["v2", "v2_long_sep", "v1"])
def string_cross(request):
    @tf.function(input_signature=_STRING_CROSS_SPEC)
    def cross(s_idx, s_val, shape, i_idx, i_val, dense_s, dense_i):
        indices, values, shapes = [s_idx, i_idx], [s_val, i_val], [shape, shape]
        if request.param == "v1":
            out = R.SparseCross(indices=indices, values=values, shapes=shapes, dense_inputs=[dense_s, dense_i],
                                hashed_output=False, num_buckets=0, hash_key=0, out_type=tf.string,
                                internal_type=tf.int64)
        else:
            out = R.SparseCrossV2(indices=indices, values=values, shapes=shapes, dense_inputs=[dense_s, dense_i],
                                  sep="-" if request.param == "v2" else "<" + "=" * 25 + ">")
        return {"indices": out.output_indices, "shape": out.output_shape,
                "hashed": tf.strings.to_hash_bucket_fast(out.output_values, 2**62)}
    fused = tf_blade.optimize(cross, bridge="native", min_cluster_size=1).signatures["serving_default"]
    counts = op_counts(fused)
    assert counts["BladeFusedCall"] == 1 and not {"SparseCross", "SparseCrossV2"} & set(counts), counts
    return cross, fused


@pytest.mark.parametrize("n", [0, 1, 13])
def test_string_crosses_match_tensorflow(string_cross, rng, n):
    cross, fused = string_cross
    args = _string_cross_inputs(rng, n)
    want, got = cross(*args), fused(*args)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)


def test_string_cross_kernel_bytes(rng):
    from conftest import decode_tstrings
    from tf_blade.kernels.errors import new_error_buffer
    from numba import njit

    from tf_blade.kernels.concat import keep_alive, part_table
    from tf_blade.kernels.sparse_cross import cross_strings, dense_rows
    from tf_blade.kernels.strings import tstrings_from_bytes

    @njit
    def cross(ids, pools, counts, starts, sep, err):  # as the lowering calls it
        out = cross_strings(part_table(ids), part_table(pools), part_table(counts), part_table(starts), 1, sep, err)
        keep_alive((ids, pools, counts, starts))
        return out
    words = [[b"a", b"b" * 23], [b"", "\u00e9".encode()], [b"c", b"d"]]
    pools = [tstrings_from_bytes(w) for w in words]
    ids = tuple(np.arange(2) for _ in words)
    counts, starts = zip(*[dense_rows(1, 2) for _ in words])
    err = new_error_buffer()
    indices, text, shape = cross(ids, tuple(pools), counts, starts, tstrings_from_bytes([b"::"]), err)
    assert err[0] == 0 and shape.tolist() == [1, 8]
    want = tf.sparse.cross([tf.constant([w]) for w in words], separator="::").values.numpy().tolist()
    assert decode_tstrings(text, 8) == want


def test_string_cross_with_int_values_and_string_internal_type_stays_in_tf():
    @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.int64), tf.TensorSpec([None, 1], tf.string)])
    def f(i, s):
        out = R.SparseCross(indices=[], values=[], shapes=[], dense_inputs=[i, s], hashed_output=False,
                            num_buckets=0, hash_key=0, out_type=tf.string, internal_type=tf.string)
        return tf.strings.to_hash_bucket_fast(out.output_values, 10)
    assert op_counts(tf_blade.optimize(f, min_cluster_size=1).signatures["serving_default"])["SparseCross"] == 1


def test_string_crosses_reject_bad_input_as_tf_does(string_cross, rng):
    cross, fused = string_cross
    args = _string_cross_inputs(rng, 4)
    for bad in (
        {5: args[5][:3]},                                               # dense rows != batch
        {2: tf.constant([5, 3], tf.int64)},                             # sparse batch != dense rows
        {1: tf.concat([args[1], tf.constant(["extra"])], 0)},           # values longer than indices
    ):
        case = [bad.get(i, a) for i, a in enumerate(args)]
        with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
            cross(*case)
        with pytest.raises(tf.errors.InvalidArgumentError) as ours:
            fused(*case)
        assert error_core(theirs.value.message) == error_core(ours.value.message)


def test_a_new_number_of_crossed_columns_compiles_no_kernel(rng):
    """The crossing kernels take part tables (kernels/concat.part_table), not tuples: crosses of 2,
    3 and 4 dense int64 columns share one compile of cross_hashed, and each matches TF's."""
    from tf_blade.kernels import sparse_cross as k_cross
    signatures = None
    for n in (2, 3, 4):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.int64)] * n)
        def f(*columns):
            out = R.SparseCross(indices=[], values=[], shapes=[], dense_inputs=list(columns), hashed_output=True,
                                num_buckets=97, hash_key=956888297470, out_type=tf.int64, internal_type=tf.int64)
            return {"values": out.output_values, "indices": out.output_indices}
        opt = tf_blade.optimize(f, min_cluster_size=1)
        args = [tf.constant(rng.integers(-2**40, 2**40, (5, 2))) for _ in range(n)]
        want, got = f(*args), opt.signatures["serving_default"](*args)
        for key in want:
            np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=f"{n} {key}")
        if signatures is None:
            signatures = set(k_cross.cross_hashed.signatures)
        assert set(k_cross.cross_hashed.signatures) == signatures, n

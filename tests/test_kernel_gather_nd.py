"""kernels/gather_nd.py against tf.raw_ops.GatherNd, random inputs, bit-exact, errors included."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import assert_matches_tf, error_core
from tf_blade.kernels.errors import error_text, new_error_buffer
from tf_blade.kernels.gather_nd import gather_nd

I64 = np.iinfo(np.int64)


NODE_NAME = np.frombuffer(b", node name: GatherNd", np.uint8)  # what the lowering passes for its node


def tf_gather_nd(params, indices):
    try:
        return tf.raw_ops.GatherNd(params=tf.constant(params), indices=tf.constant(indices)).numpy(), None
    except tf.errors.InvalidArgumentError as e:
        return None, error_core(e.message)


def run_kernel(params, indices):
    err = new_error_buffer()
    out, shape = gather_nd(params, indices, NODE_NAME, err)
    if err[0]:
        return None, error_text(err)
    return out.reshape(tuple(shape)), None


def check(params, indices):
    want, tf_err = tf_gather_nd(params, indices)
    got, k_err = run_kernel(params, indices)
    assert_matches_tf(got, k_err, want, tf_err, same_message=True)


def random_case(rng, idx_dtype, bad_rate=0.3):
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
    if rng.random() < 0.15:
        shape = tuple(0 if rng.random() < 0.5 else d for d in shape)
    params = rng.standard_normal(shape).astype(np.float32)
    k = int(rng.integers(0, rank + 1))
    batch = tuple(int(d) for d in rng.integers(0, 4, size=int(rng.integers(0, 3))))
    idx = np.stack([rng.integers(0, max(shape[d], 1), size=batch) for d in range(k)], axis=-1) \
        if k else np.zeros(batch + (0,), np.int64)
    idx = idx.astype(idx_dtype).reshape(batch + (k,))
    if idx.size and rng.random() < bad_rate:
        info = np.iinfo(idx_dtype)
        idx.flat[rng.integers(0, idx.size)] = rng.choice([-1, 5, info.max, info.min])
    return params, idx


@pytest.mark.parametrize("idx_dtype", [np.int16, np.int64])
def test_gather_nd_random(rng, idx_dtype):
    for _ in range(120):
        check(*random_case(rng, idx_dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.bool_, np.uint8])
def test_gather_nd_value_dtypes(rng, dtype):
    # Ranks vary in test_gather_nd_random; here [rows, width] params and [n, depth] indices only:
    # one compile per dtype (each pair of ranks is a compile of its own, ~3 s of CI).
    for _ in range(30):
        rows, width = (int(d) for d in rng.integers(0, 5, size=2))
        params = (rng.standard_normal((rows, width)) * 100).astype(dtype)
        idx = rng.integers(-1, max(rows, width) + 1, size=(int(rng.integers(0, 4)), int(rng.integers(0, 3))))
        check(params, idx)


def test_gather_nd_index_depth_greater_than_rank_sets_error():
    # TF: "index innermost dimension length must be <= params rank"
    for params_shape, idx_shape in [((3, 3), (2, 3)), ((4,), (1, 2)), ((2, 2), (0, 3)),
                                    ((4,), (3,)), ((2,), (5,)), ((2, 2), (1, 1, 4))]:
        check(np.ones(params_shape, np.float32), np.zeros(idx_shape, np.int32))


def test_gather_nd_empty_params():
    f = np.float32
    check(np.zeros((3, 0), f), np.zeros((2, 1), np.int32))   # TF: "params is empty"
    check(np.zeros((3, 0), f), np.array([[7]], np.int32))
    check(np.zeros((3, 0), f), np.zeros((0, 1), np.int32))   # nothing requested: fine
    check(np.zeros((0, 3), f), np.zeros((2, 0), np.int32))   # whole (empty) params twice
    check(np.zeros((0, 3), f), np.zeros((0, 0), np.int32))


def test_gather_nd_depth_zero_copies_whole_params(rng):
    params = rng.standard_normal((2, 3)).astype(np.float32)
    check(params, np.zeros((2, 0), np.int64))
    check(params, np.zeros((2, 2, 0), np.int32))


@pytest.mark.parametrize("bad", [[-1, 0], [1, 3], [2, 0], [I64.min, 0], [0, I64.max]])
def test_gather_nd_out_of_range_sets_error(bad):
    params = np.arange(6, dtype=np.float64).reshape(2, 3)
    idx = np.array([[0, 0], bad], np.int64)
    check(params, idx)
    check(params, np.array([bad, [1, 2], [-3, 9], [1, 1]], np.int64))  # TF names the last one, [-3, 9]
    check(params, np.array([[bad, [0, 1]], [[5, 5], [0, 2]]], np.int64))  # "indices[1,0] = [5, 5]"
    check(params, np.array(bad, np.int64))                                # a vector: "indices = [...]"
    err = new_error_buffer()
    gather_nd(params, idx, NODE_NAME, err)
    want = f"indices[1] = [{bad[0]}, {bad[1]}] does not index into param shape [2,3], node name: GatherNd"
    assert error_text(err) == want


def test_gather_nd_large(rng):
    params = rng.standard_normal((50, 40, 3)).astype(np.float32)
    idx = np.stack([rng.integers(0, 50, 5000), rng.integers(0, 40, 5000)], axis=-1)
    check(params, idx)
    check(params, idx[:, :1].copy())


def test_fused_gather_nd_names_its_node_as_tf_does():
    """TF's message ends ", node name: <the GatherNd node>": the lowering hands the kernel its own."""
    import tf_blade
    specs = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 2], tf.int64)]
    f = tf.function(lambda p, i: {"out": tf.gather_nd(p * 2.0, i, name="pick") + 1.0}, input_signature=specs)
    opt = tf_blade.optimize(f, bridge="native", min_cluster_size=1)
    assert opt.report.functions["serving_default"]["clusters"][0]["op_types"].get("GatherNd") == 1
    args = tf.ones([2, 3]), tf.constant([[0, 0], [1, 3], [0, 2]], tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        f(*args)
    with pytest.raises(tf.errors.InvalidArgumentError) as ours:
        opt.signatures["serving_default"](*args)
    assert error_core(ours.value.message) == error_core(theirs.value.message)
    assert error_core(ours.value.message).endswith(", node name: pick")


def test_each_node_of_a_shared_template_names_itself():
    """Two GatherNd chains that differ only in their names share one part template; each one's
    error must name its own node (a name in the template named the same node for both)."""
    import tf_blade
    specs = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 2], tf.int64)] * 2
    f = tf.function(lambda p, i, q, j: {"a": tf.gather_nd(p * 2.0, i, name="pick") + 1.0,
                                        "b": tf.gather_nd(q * 2.0, j, name="choose") + 1.0}, input_signature=specs)
    fused = tf_blade.optimize(f, bridge="native", min_cluster_size=1).signatures["serving_default"]
    good, bad = tf.constant([[0, 0]], tf.int64), tf.constant([[1, 3]], tf.int64)
    for i, j, name in ((bad, good, "pick"), (good, bad, "choose")):
        with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
            f(tf.ones([2, 3]), i, tf.ones([2, 3]), j)
        with pytest.raises(tf.errors.InvalidArgumentError) as ours:
            fused(tf.ones([2, 3]), i, tf.ones([2, 3]), j)
        assert error_core(ours.value.message) == error_core(theirs.value.message)
        assert error_core(ours.value.message).endswith(f", node name: {name}")


def test_nodes_differing_only_in_name_share_their_part_template():
    """The name is a parameter of the part, not part of its source: a model built again under
    other names (Keras layer counters: dense_features_29/...) compiled all its parts again, warm
    caches or not."""
    import json

    import tf_blade
    from conftest import running_nodes
    from tf_blade.codegen.generate import generate
    specs = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 2], tf.int64)]
    templates = []
    for name in ("pick", "choose"):
        f = tf.function(lambda p, i: {"out": tf.gather_nd(p * 2.0, i, name=name) + 1.0}, input_signature=specs)
        graph = tf_blade.optimize(f, bridge="native", min_cluster_size=1).signatures["serving_default"].graph
        (fused,) = [n for n in running_nodes(graph.as_graph_def()) if n.op == "BladeFusedCall"]
        source, parts = generate(json.loads(fused.attr["cluster"].s.decode()))
        as_source = str(list(name.encode()))[1:-1]  # how a module's constant spells the name
        assert as_source in source and not any(as_source in text for text in parts.values())
        templates.append(set(parts))
    assert templates[0] == templates[1]

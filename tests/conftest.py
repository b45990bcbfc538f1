"""Shared builders: small feature-column models and random batches with the awkward cases."""
import os

# CI has no GPU: numba.cuda kernels run in Numba's CUDA simulator there. Set before anything
# imports Numba (it reads the variable once); a machine with an NVIDIA driver runs them for real.
if not os.path.exists("/dev/nvidiactl"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# No compile child (tf_blade/runtime/compile_jobs.py): pytest.ini's two workers already keep both
# cores compiling, and a child beside each only adds processes that compile Numba's own helpers
# again (the whole suite, cold: 895 s with children). tests/test_compile_jobs.py turns it on.
os.environ.setdefault("TF_BLADE_COMPILE_CHILD", "0")

import re

import numpy as np
import pytest
import tensorflow as tf

FC = tf.feature_column

# (name, dtype, input kind, combiner): every variant the spine must handle, in one model.
COLUMNS = [
    ("s_sparse_mean", tf.string, "sparse", "mean"),
    ("s_dense_sum", tf.string, "dense", "sum"),
    ("i_sparse_sqrtn", tf.int64, "sparse", "sqrtn"),
    ("i_dense_mean", tf.int64, "dense", "mean"),
]
BUCKETS = 1000
DIM = 8


def feature_columns():
    return [FC.embedding_column(FC.categorical_column_with_hash_bucket(name, BUCKETS, dtype=dtype),
                                DIM, combiner=combiner)
            for name, dtype, _, combiner in COLUMNS]


def input_specs():
    specs = {}
    for name, dtype, kind, _ in COLUMNS:
        specs[name] = (tf.SparseTensorSpec([None, None], dtype) if kind == "sparse"
                       else tf.TensorSpec([None, 1], dtype))
    return specs


def dense_features_function():
    import tf_keras
    layer = tf_keras.layers.DenseFeatures(feature_columns())
    fn = tf.function(lambda x: layer(x), input_signature=[input_specs()])
    fn.get_concrete_function()
    return fn, layer


def random_batch(batch, rng, max_ids=5, empty_fraction=0.2, huge=False):
    """Rows with 0..max_ids ids, duplicates within rows, unsorted sparse columns, huge int ids."""
    out = {}
    for name, dtype, kind, _ in COLUMNS:
        counts = rng.integers(0, max_ids + 1, size=batch) if kind == "sparse" else np.ones(batch, int)
        counts[rng.random(batch) < empty_fraction] = 0
        n = int(counts.sum())
        if dtype == tf.string:
            pool = np.array([b"", b"a", "\u00e9t\u00e9".encode(), b"x" * 100, b"id_7", b"id_7"], dtype=object)
            values = rng.choice(pool[1:], size=n) if n else np.zeros(0, object)
            missing = b""
        else:
            values = rng.integers(-5, 50, size=n)
            if huge:  # ids near int64's limits, where a sloppy decimal formatter would break
                near = rng.random(n) < 0.5
                values[near] = np.where(rng.random(int(near.sum())) < 0.5, 2**63 - 1, -2**63)
            missing = -1
        if kind == "sparse":
            rows = np.repeat(np.arange(batch), counts)
            cols = np.concatenate([np.arange(c) for c in counts]) if n else np.zeros(0, int)
            width = max(int(counts.max()) if batch else 0, 1)
            out[name] = tf.SparseTensor(np.stack([rows, cols], 1).astype(np.int64).reshape(-1, 2),
                                        tf.constant(values, dtype=dtype), [batch, width])
        else:
            dense = np.full((batch, 1), missing, dtype=object if dtype == tf.string else np.int64)
            dense[counts > 0, 0] = values
            out[name] = tf.constant(dense, dtype=dtype)
    return out


def flat_inputs(batch):
    return tf.nest.flatten(batch, expand_composites=True)


def factor_into(rng, size, rank):
    """``rank`` non-negative ints whose product is ``size`` (random split of its prime factors)."""
    dims = [1] * rank
    if rank == 0:
        return dims
    if size == 0:
        dims = [int(d) for d in rng.integers(0, 4, size=rank)]
        dims[rng.integers(0, rank)] = 0
        return dims
    n, p = size, 2
    while n > 1:
        while n % p == 0:
            dims[rng.integers(0, rank)] *= p
            n //= p
        p += 1
    return dims


def assert_matches_tf(got, kernel_error, want, tf_error, same_message=True):
    """The kernel agrees with TF: both reject the input (with TF's own message, unless not
    ``same_message``), or both give the same bits."""
    if tf_error is not None:
        assert kernel_error, f"TF raised {tf_error!r} but the kernel accepted the input"
        if same_message:
            assert kernel_error in tf_error, (kernel_error, tf_error)
        return
    assert kernel_error is None, f"kernel rejected an input TF accepts: {kernel_error}"
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype.kind == "f":  # bit patterns: -0.0 vs 0.0 and NaN payloads count
        got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    np.testing.assert_array_equal(got, want)


def error_core(message):
    """TF's own words in an error message: no graph-execution preamble, stack, function or node
    context (the first line of a graph function's error is only "Graph execution error:"; an
    eager op's and a lambda's start "{{function_node ...}} ")."""
    lines = [l for l in message.splitlines() if l.strip() and not l.startswith(
        ("Graph execution", "Detected at", "<stack", "\t", " "))]  # " ": stack lines ("  File ...")
    if not lines:
        return message
    return re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", lines[0]).split(" [[")[0].split(" [Op:")[0]


def run_tf(op, **inputs):
    """(result, None) or (None, TF's error message) of one raw op on eager inputs."""
    try:
        return getattr(tf.raw_ops, op)(**inputs).numpy(), None
    except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
        return None, e.message


def run_kernel(kernel, *args):
    """(result, None) or (None, the kernel's error text); ``args`` exclude the error buffer."""
    from tf_blade.kernels.errors import error_text, new_error_buffer
    err = new_error_buffer()
    out = kernel(*args, err)
    return (None, error_text(err)) if err[0] else (out, None)


def decode_tstrings(buf, n):
    """The bytes of the ``n`` SMALL or OFFSET tstrings at the start of ``buf`` (the forms
    kernels/strings.py ``new_tstrings`` writes)."""
    out = []
    for i in range(n):
        at = i * 24
        kind = buf[at] & 3
        assert kind in (0, 2), kind
        if kind == 0:
            out.append(buf[at + 1:at + 1 + (int(buf[at]) >> 2)].tobytes())
        else:
            size, offset = (int(buf[at:at + 8].view(np.uint32)[k]) for k in (0, 1))
            out.append(buf[at + offset:at + offset + (size >> 2)].tobytes())
    return out


@pytest.fixture(autouse=True)
def no_hidden_fallback(request):
    """A fused op whose first answer differs from the original ops' (or that breaks its contract)
    logs a warning and answers with TF's ops from then on (tf_blade/runtime/blade_op.cc): a test
    comparing it with TF would then compare TF with TF and pass. So every test fails when a fused
    op of this process falls back during it, unless marked ``fallback_expected``."""
    from tf_blade.runtime.bridge import native_bridge
    native = native_bridge()
    if native is None or request.node.get_closest_marker("fallback_expected"):
        yield
        return
    before = native.fallback_count()
    yield
    assert native.fallback_count() == before, ("a fused op fell back to the original TF ops during this test "
                                               "(its warning says why): its kernel answered differently or broke the op")


@pytest.fixture
def rng():
    """Fresh random inputs every run; the seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("TF_BLADE_TEST_SEED", 0)) or np.random.SeedSequence().entropy
    print(f"numpy seed: {seed}")  # shown by pytest when the test fails
    return np.random.default_rng(seed)


def optimize_uncompiled(model, **options):
    """``tf_blade.optimize`` with its kernels left uncompiled, for tests that read the rewritten
    graph and never run it: a model's compile is 5-100 s of CI. Run anyway, a fused op would
    compile its kernel on its first call."""
    import tf_blade
    from tf_blade.runtime import compiler
    real = compiler.load_kernel
    compiler.load_kernel = lambda spec_text: None
    try:
        return tf_blade.optimize(model, **options)
    finally:
        compiler.load_kernel = real


def fused_specs(model, signature="serving_default", **options):
    """The cluster specs (before the spec rewrites) of the fused ops ``optimize_uncompiled``
    makes of ``model``."""
    import json
    graph = optimize_uncompiled(model, **options).signatures[signature].graph.as_graph_def()
    return [json.loads(n.attr["cluster"].s.decode()) for n in running_nodes(graph) if n.op == "BladeFusedCall"]


def hashed_column_spec(dtype):
    """The fused cluster's spec (before the spec rewrites) of one hashed embedding column."""
    from tf_blade.examples import criteo_feature_model
    (spec,) = fused_specs(criteo_feature_model(1, dim=4, dtype=dtype).serve, bridge="native")
    return spec


def running_nodes(graph_def):
    """The nodes of a graph and of its library functions, less the fallback functions that keep
    each cluster's original ops (they run only when a kernel cannot)."""
    from tf_blade.passes.fallback import is_fallback
    return list(graph_def.node) + [n for f in graph_def.library.function
                                   if not is_fallback(f.signature.name) for n in f.node_def]


def op_counts(concrete_function):
    """Op types in a function's graph and every function it calls."""
    import collections
    return collections.Counter(n.op for n in running_nodes(concrete_function.graph.as_graph_def()))


def check_one_op_on_tags_fields(f, rng, batches=(0, 1, 100)):
    """Optimizes ``f`` (a tf.function of one string vector ``s``, tags fields "t3|t1") and checks
    that it runs as one fused op giving ``f``'s results on fresh fields of every batch size."""
    import tensorflow as tf

    import tf_blade
    from tf_blade.runtime.bridge import native_bridge
    fused = tf_blade.optimize(f).signatures["serving_default"]
    assert set(op_counts(fused)) - {"Placeholder", "Identity", "NoOp"} == {"BladeFusedCall"}, op_counts(fused)
    fallbacks = native_bridge().fallback_count()  # a first call that differed would fall back to TF
    for n in batches:
        s = tf.constant(["|".join(f"t{v}" for v in rng.zipf(1.3, rng.integers(0, 6))) for _ in range(n)], tf.string)
        got = fused(s=s)
        got = next(iter(got.values())) if isinstance(got, dict) else got
        np.testing.assert_array_equal(got.numpy(), f(s).numpy())
    assert native_bridge().fallback_count() == fallbacks

"""Fuzzing the serving path (issue 6): random malformed inputs through an optimized model, run in
a subprocess so that a crash is counted instead of killing the test run.

CI runs a short fixed-seed job. The long job, by hand:

    TF_BLADE_FUZZ_CASES=3000 TF_BLADE_FUZZ_SEED=7 python -m pytest -q -s tests/test_fuzz.py

Each case takes a random batch of the four-column model in conftest.py (string/int x sparse/dense)
and breaks one sparse input: indices outside dense_shape or negative, rows out of order,
duplicate coordinates, dense_shape huge / zero / smaller than the data, ids at the int64 limits,
empty, non-ASCII and 64 KiB strings. TF is the reference: both sides raise InvalidArgumentError,
or both return the same bits.
"""
import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    sys.path.insert(0, {tests!r})
    import tf_blade
    from conftest import COLUMNS, dense_features_function, flat_inputs, random_batch

    stock, _ = dense_features_function()
    fused = tf_blade.optimize(stock, bridge="native").signatures["serving_default"]
    sparse = [name for name, _, kind, _ in COLUMNS if kind == "sparse"]
    rng = np.random.default_rng({seed})

    def corrupt(st, how):
        idx, val, shape = st.indices.numpy().copy(), st.values.numpy(), st.dense_shape.numpy().copy()
        n = len(idx)
        if how == "outside" and n:
            idx[rng.integers(n), rng.integers(2)] = shape.max() + rng.integers(0, 2**40)
        elif how == "negative" and n:
            idx[rng.integers(n), rng.integers(2)] = -rng.integers(1, 2**62)
        elif how == "unsorted" and n > 1:
            idx = idx[rng.permutation(n)]
        elif how == "duplicate" and n > 1:
            idx[1:] = idx[:1]
        elif how == "huge_shape":
            shape = np.array([2**62, 2**62], np.int64)
        elif how == "zero_shape":
            shape = np.zeros(2, np.int64)
        elif how == "short_shape" and n:
            shape[0] = max(int(idx[:, 0].max()), 1) - 1
        elif how == "limits" and n and val.dtype != object:
            val = rng.choice(np.array([2**63 - 1, -2**63, 0, -1], np.int64), n)
        elif how == "strings" and n and val.dtype == object:
            choices = [b"", "\\u00e9\\u00e8\\u4e2d".encode(), b"z" * 65536, b"\\x00\\xff"]
            val = np.array([choices[i] for i in rng.integers(0, len(choices), n)], object)
        return tf.SparseTensor(idx, tf.constant(val, st.values.dtype), shape)

    def outcome(fn, *args):
        try:
            return "ok", next(iter(tf.nest.flatten(fn(*args)))).numpy()
        except tf.errors.InvalidArgumentError:
            return "InvalidArgumentError", None
        except tf.errors.OpError as e:
            return type(e).__name__, None

    kinds = ["outside", "negative", "unsorted", "duplicate", "huge_shape", "zero_shape",
             "short_shape", "limits", "strings"]
    disagree = []
    for case in range({cases}):
        batch = random_batch(int(rng.integers(0, 40)), rng, huge=bool(rng.integers(2)))
        name = sparse[rng.integers(len(sparse))]
        how = kinds[rng.integers(len(kinds))]
        batch[name] = corrupt(batch[name], how)
        want, got = outcome(stock, batch), outcome(fused, *flat_inputs(batch))
        same = want[0] == got[0] and (want[0] != "ok" or np.array_equal(want[1], got[1]))
        if not same:
            disagree.append((case, name, how, want[0], got[0]))
    from tf_blade.runtime.bridge import native_bridge
    # a kernel that answered a case wrongly would hand every later one to TF's ops (the first-run
    # check), so that the rest agree with TF by construction: none may have
    print("FUZZ cases", {cases}, "disagreements", len(disagree), disagree[:10], "fallbacks", native_bridge().fallback_count())
""")


def test_malformed_inputs_never_crash_and_match_tf():
    cases = int(os.environ.get("TF_BLADE_FUZZ_CASES", 150))
    seed = int(os.environ.get("TF_BLADE_FUZZ_SEED", 2026))
    tests = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run([sys.executable, "-c", _SCRIPT.format(tests=tests, seed=seed, cases=cases)],
                            capture_output=True, text=True, timeout=1800,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    crashed = result.returncode != 0
    print(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "(no output)")
    assert not crashed, f"the serving process died (exit {result.returncode}): {result.stderr[-3000:]}"
    assert "disagreements 0 " in result.stdout and result.stdout.rstrip().endswith("fallbacks 0"), result.stdout[-2000:]

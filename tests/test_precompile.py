"""``tf-blade precompile``: compiles (or loads) the bundled model kinds' kernels."""
import pytest

from tf_blade import cli
from tf_blade import examples as ex
from tf_blade.precompile import precompile


def test_precompile_builds_and_runs_each_kind_it_is_given():
    logged = []
    seconds = precompile(["criteo-fc", "keras-prep"], log=logged.append)
    assert set(seconds) == {"criteo-fc", "keras-prep"} and all(s > 0 for s in seconds.values())
    assert [line.split(":")[0] for line in logged] == ["criteo-fc", "keras-prep"]


def test_precompile_names_the_kinds_it_knows():
    with pytest.raises(ValueError, match="criteo-wdl"):
        precompile(["criteo-dlrm"])


def test_cli_runs_precompile(capsys):
    assert cli.main(["precompile", "criteo-fc"]) == 0
    assert capsys.readouterr().out.startswith("criteo-fc: kernels compiled or loaded in ")


@pytest.mark.parametrize("kind", ["column-kinds", "keras-layers"])
def test_the_models_precompile_builds_fuse_whole_and_match_tf(kind):
    """A kind precompiles the library only if its model is fused: each is one op, every op of the
    model inside, and gives TF's bits on batches of 0, 1 and 33 rows."""
    import numpy as np
    import tensorflow as tf

    import tf_blade
    build, batch = {"column-kinds": (ex.column_kinds_model, ex.column_kinds_batch),
                    "keras-layers": (ex.keras_layers_model, ex.keras_layers_batch)}[kind]
    module = build()
    opt = tf_blade.optimize(module.serve, bridge="native")
    (function,) = opt.report.functions.values()
    assert len(function["clusters"]) == 1 and function["tf_ops_after"] == 0, str(opt.report)
    for rows in (0, 1, 33):
        raw = batch(rows, seed=rows)
        want = module.serve(**{k: tf.constant(v) if isinstance(v, np.ndarray) else v for k, v in raw.items()})
        got = opt.signatures["serving_default"](**ex.signature_inputs(raw))
        assert got["features"].numpy().tobytes() == want["features"].numpy().tobytes(), rows



def test_a_second_process_finds_every_kernel_in_the_disk_cache(kind="column-kinds"):
    """Numba's disk cache is keyed by the generated source, so that source must not change from
    process to process: a second fresh process writes nothing to the caches (the model of every
    column kind). (TF exports a table
    in an order that changes per process; generated lookups once followed it and recompiled.)
    Two fresh processes, not this one: error contexts name nodes, and Keras numbers its layers
    by how many this process built before (dense_features_4), which is the test order's."""
    import os
    import subprocess
    import sys

    from tf_blade.runtime.cache import cache_root

    def files():
        roots = [os.path.join(cache_root(), "kernels")] + [os.environ[v] for v in ("NUMBA_CACHE_DIR",) if os.environ.get(v)]
        return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
                for root in roots for d, _, names in os.walk(root) for f in names}

    def fresh_process():
        subprocess.run([sys.executable, "-m", "tf_blade.precompile", kind], check=True, capture_output=True)
    fresh_process()  # compiles, or loads what an earlier run compiled
    before = files()
    fresh_process()
    written = {f for f, mtime in files().items() if before.get(f) != mtime}
    assert not written, sorted(written)

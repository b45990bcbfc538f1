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


def test_cli_help_goes_to_stdout_and_an_unknown_command_fails(capsys):
    assert cli.main(["--help"]) == 0 and "tf-blade optimize" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2 and "tf-blade optimize" in capsys.readouterr().err
    for command in ("demo", "precompile", "optimize", "bench"):  # each names itself as it is typed
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        assert done.value.code == 0 and capsys.readouterr().out.startswith(f"usage: tf-blade {command}")


def test_python_m_benchmarks_is_the_suite(capsys, monkeypatch):
    import runpy
    import sys
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # what the suite sets for torch, undone after
    monkeypatch.setattr(sys, "argv", ["benchmarks", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("tf_blade.benchmarks", run_name="__main__")
    assert done.value.code == 0 and "--skip-compile" in capsys.readouterr().out


def _part_templates(opt):
    """The part templates the fused ops of ``opt`` generate (named by their source)."""
    import json

    from conftest import running_nodes
    from tf_blade.codegen.generate import generate
    specs = [n.attr["cluster"].s.decode() for sig in opt.signatures.values()
             for n in running_nodes(sig.graph.as_graph_def()) if n.op.startswith("BladeFusedCall")]
    return {name for text in specs for name in generate(json.loads(text))[1]}


@pytest.mark.parametrize("kind", ["column-kinds", "keras-layers"])
def test_the_models_precompile_builds_fuse_whole_and_match_tf(kind):
    """A kind precompiles the library only if its model is fused: each is one op, every op of the
    model inside, and gives TF's bits on batches of 0, 1 and 33 rows. Built again in this process
    (other Keras layer names), it needs no new template: a node name in one compiled every part
    again, however warm the caches."""
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
    templates = _part_templates(opt)
    assert templates and _part_templates(tf_blade.optimize(build().serve, bridge="native")) == templates


"""``tf-blade precompile``: compiles (or loads) the bundled model kinds' kernels."""
import pytest

from tf_blade import cli
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

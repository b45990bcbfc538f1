"""docs/coverage.md is generated from the lowering registry; it must match the code."""
import os

from tf_blade.codegen.coverage import table
from tf_blade.codegen.registry import load_all

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "coverage.md")


def test_coverage_doc_is_current():
    with open(DOC) as f:
        assert f.read() == table(), "regenerate: python -m tf_blade.codegen.coverage > docs/coverage.md"


def test_every_lowering_has_a_row():
    text = table()
    for op in load_all():
        assert f"| {op} | lowerings/" in text

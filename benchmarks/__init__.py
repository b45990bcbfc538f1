"""Benchmarks: stock TF vs tf_blade in the same process, interleaved; run as python -m benchmarks.<name>
(python -m benchmarks alone runs the suite)."""
import json
import os


def write_report(out: str, result: dict, lines: list) -> None:
    """Writes ``result`` to OUT.json and the markdown ``lines`` to OUT.md, and prints the latter."""
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".json", "w") as fh:
        json.dump(result, fh, indent=2)
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))

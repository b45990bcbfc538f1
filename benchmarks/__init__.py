"""Benchmarks: stock TF vs tf_blade in the same process, interleaved; run as python -m benchmarks.<name>
(python -m benchmarks alone runs the suite)."""
import json
import os
import subprocess
import sys


def write_report(out: str, result: dict, lines: list) -> None:
    """Writes ``result`` to OUT.json and the markdown ``lines`` to OUT.md, and prints the latter."""
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".json", "w") as fh:
        json.dump(result, fh, indent=2)
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def child_json(args, env, timeout=900):
    """Runs ``python *args`` with ``env`` and returns the JSON value its last line of output holds.
    A child that fails or outlives ``timeout`` seconds raises RuntimeError with its output's tail."""
    try:
        done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"a benchmark child process ran past {timeout} s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"a benchmark child process failed (exit {done.returncode}):\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])

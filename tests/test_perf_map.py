"""benchmarks/perf_map.py: perf's names for the machine code Numba makes."""
from numba import njit

from tf_blade.benchmarks import perf_map


def test_the_map_names_a_function_compiled_after_record(tmp_path):
    perf_map.record()
    try:
        @njit
        def add_one_for_perf(x):
            return x + 1

        assert add_one_for_perf(41) == 42
    finally:
        perf_map.stop()
    path = tmp_path / "perf.map"
    assert perf_map.write(str(path)) >= 1
    lines = [line.split(" ", 2) for line in path.read_text().splitlines()]
    named = [(int(start, 16), int(size, 16)) for start, size, name in lines if "add_one_for_perf" in name]
    assert named and all(start > 0 and size > 0 for start, size in named)

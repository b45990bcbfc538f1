"""Names for Linux ``perf`` of the machine code Numba compiled or loaded in this process.

perf cannot name JIT code: a profile of a fused op shows bare addresses. perf reads
``/tmp/perf-<pid>.map`` (start, size, name per line) for such code, so a process that calls
``record()`` before tf_blade compiles or loads a kernel, and ``write()`` once it has, gets
symbol-level profiles of its kernels:

    from tf_blade.benchmarks import perf_map
    perf_map.record()
    ...  # optimize and warm the model
    perf_map.write()
    # then, from a shell: perf record -g -p <pid> -- sleep 5; perf report --sort sym

(criteo-fc at 4096 rows: reduce_runs 47%, hash_rows 31%, FarmHash's hash_len0to16 6%, docs/architecture.md.)
A size is the distance to the next known function, at most MAX_SIZE (perf needs one; the last
gets 4 KiB): code between libraries that were not recorded is charged to the function before it.
Numba has no such map of its own; this reads its code libraries' private fields, so it is a
measuring tool, not a part of tf_blade.
"""
from __future__ import annotations

import os
import weakref

_libraries = weakref.WeakSet()  # weak: a recording process keeps no code alive
MAX_SIZE = 1 << 20


def record() -> None:
    """From now on, remember every code library Numba finalizes (compiled or loaded from cache)."""
    from numba.core import codegen
    finalize = codegen.CPUCodeLibrary._finalize_final_module
    if hasattr(finalize, "original"):  # recording already
        return

    def remembered(library):
        _libraries.add(library)
        return finalize(library)
    remembered.original = finalize
    codegen.CPUCodeLibrary._finalize_final_module = remembered


def stop() -> None:
    """Stops remembering libraries (those remembered stay in the map)."""
    from numba.core import codegen
    method = codegen.CPUCodeLibrary._finalize_final_module
    codegen.CPUCodeLibrary._finalize_final_module = getattr(method, "original", method)


def _functions(library):
    """(address, name) of the functions ``library`` defines that the JIT has emitted."""
    # A library loaded from the disk cache keeps its functions in the module kept for linking.
    module = getattr(library, "_shared_module", None) or library._final_module
    for function in module.functions:
        if not function.is_declaration:
            address = library.get_pointer_to_function(function.name)  # 0 where not emitted
            if address:
                yield address, function.name


def write(path: str | None = None) -> int:
    """Writes the map (default /tmp/perf-<pid>.map); returns how many functions it names."""
    named = dict(pair for library in list(_libraries) for pair in _functions(library))
    starts = sorted(named)
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for i, start in enumerate(starts):
            size = starts[i + 1] - start if i + 1 < len(starts) else 4096
            f.write(f"{start:x} {min(size, MAX_SIZE):x} {named[start]}\n")
    return len(starts)

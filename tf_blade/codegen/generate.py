"""Cluster spec -> Python/Numba source: one module per part template, one per cluster.

A template module holds ``task``, a part's code composed from the per-op kernels in
``tf_blade.kernels`` as a C function (see parts.py for what a part is). The cluster module's
``body(inputs..., err)`` calls the parts' tasks in order, through their addresses; its ``entry``
is the C-callable function the native op calls (ABI in ``tf_blade/runtime/abi.py``).
"""
from __future__ import annotations

import hashlib
from typing import Dict, List

import numpy as np

from .dtypes import STRING, numpy_name
from .emitter import Emitter, Value, empty_expr
from .lowerings.const import const_array
from .parts import Part, decompose, is_writer, part_deps, ref_meta
from .registry import load_all
from ..feature_column.spec import const_values, producer
from ..kernels.bag_layer import NO_ROW_SUM, ROW_SUM_DROP, ROW_SUM_KEEP, forget_wanted, want_task
from ..kernels.concat import WIDE_DTYPES, WIDE_JOBS
from ..kernels.errors import OOM_PREFIX, context_suffix, message_bytes
from ..runtime.threads import parallel_enabled


class SpecNode:
    """One node of a cluster spec, read-only, as the lowerings see it."""

    def __init__(self, raw: dict, runtime_params: Dict[str, str] = None):
        self.name = raw["name"]
        self.op = raw["op"]
        self.attrs = dict(raw["attrs"], **(runtime_params or {}))
        self.out_dtypes = [numpy_name(d) for d, _ in raw["outputs"]]
        self.out_ranks = [r for _, r in raw["outputs"]]


# Functions only compiled code calls: no CPython wrapper, which Numba would otherwise compile
# with each (boxing every array of a returned tuple: 4 s of wide & deep's failure function).
INTERNAL = "@njit(cache=True, nogil=True, no_cpython_wrapper=True)"


def _meta(spec, ref):
    dtype, rank = ref_meta(spec, ref)
    return numpy_name(dtype), rank


def _vars(v: Value) -> List[str]:
    return [v.var, v.off, v.dat] if v.is_string else [v.var]


def _empties(dtype, rank) -> List[str]:
    """The empty arrays standing for a value of ``dtype`` and ``rank`` (a string is three)."""
    if dtype == "string":
        return [empty_expr("int64", rank), "np.zeros(0, np.uint8)", "np.zeros(0, np.uint8)"]  # ids, tstrings
    return [empty_expr(dtype, rank)]


def _emit_part(spec, part: Part, em: Emitter, lowerings) -> List[str]:
    """The source lines of ``part``'s template: its code as ``task``, a C function the cluster's
    body, entry and groups call through its address (``_run_part``). Called, not linked: Numba
    links a callee's code into each caller's library and optimizes and emits it again there, so
    a linked part (with every kernel it calls) was compiled once more in the entry, in body and
    in its group. The task reads its arguments as one tuple and stores its results as another,
    typed from the spec (``_array_types``); ``k_parallel.compile_parts`` compiles it (its ``JOB``),
    when the cluster's module knows something will run it (``compile_tasks``)."""
    values: Dict[str, Value] = {}
    params: List[str] = []
    arg_types: List[str] = []
    for i, ref in enumerate(part.inputs):
        dtype, rank = _meta(spec, ref)
        values[ref] = Value(f"p{i}", dtype, rank)
        params += _vars(values[ref])
        arg_types += _array_types(dtype, rank)
    runtime_params = []
    # A failing step returns without writing a result: the caller's slot holds empty arrays that
    # own nothing (k_parallel.task_caller) and it reads err first. Writing failed_part()'s arrays
    # at each of a part's ~20 early returns was a quarter of its code (the ragged Keras Hashing
    # model's largest part: 20.5k -> 14.9k LLVM instructions, its compile 4.6-4.9 -> 3.6-3.7 s).
    em.lines, em.fail_expr = [], ""
    for k in part.nodes:
        raw = spec["nodes"][k]
        low = lowerings[raw["op"]]
        rt = {}
        for attr in getattr(low, "runtime_attrs", ()):
            rt[attr] = f"r{len(runtime_params)}"
            runtime_params.append((rt[attr], "types.int64"))
        rt["texts"] = [f"r{len(runtime_params) + i}" for i in range(len(low.texts(raw, spec)))]
        runtime_params += [(v, _array_type("uint8", 1)) for v in rt["texts"]]
        for attr in low.array_attrs:
            rt[attr] = f"r{len(runtime_params)}"
            runtime_params.append((rt[attr], _array_type(low.attr_array(raw, spec, attr).dtype.name, 1)))
        node = SpecNode(raw, rt)
        em.node_name = node.op
        em.line(f"# {node.op}")
        # None: a string constant left out of the part, read through texts() (parts.text_refs)
        results = low.emit(node, [values.get(r) for r in raw["inputs"]], em)
        for j, res in enumerate(results):
            values[f"{k}:{j}"] = res if isinstance(res, Value) else Value(res, node.out_dtypes[j], node.out_ranks[j])
    returns = "".join(f"np.ascontiguousarray({x}), " for r in part.outputs for x in _vars(values[r]))
    wide = ["wide"] if _is_parallel(spec, part, lowerings) else []
    arg_types += [t for _, t in runtime_params] + ["types.boolean"] * len(wide) + [_array_type("uint8", 1)]
    result_types = [t for r in part.outputs for t in _array_types(*_meta(spec, r))]
    em.kernel("parallel", "task_caller")
    em.kernel("parallel", "group_caller")
    em.imports.add("from numba import from_dtype, types")
    signature = ', '.join(params + [p for p, _ in runtime_params] + wide + ['err'])
    writer = _writer(spec, part)
    source = (_fail_function("failed_part", spec, part.outputs) if writer is not None else []) + [
        "", "",
        f"ARGS = types.Tuple(({''.join(t + ', ' for t in arg_types)}))",
        f"RESULT = types.Tuple(({''.join(t + ', ' for t in result_types)}))",
        "_read_args, _write_result = k_parallel.args_reader(ARGS), k_parallel.result_writer(RESULT)",
        f"RAISED = \"{OOM_PREFIX} a tensor in a fused kernel, which raised (a size beyond memory)\"",
        "run_task = k_parallel.task_caller(RESULT, ARGS, raised_message=RAISED)",
        "run_group = k_parallel.group_caller(RESULT, ARGS, raised_message=RAISED)  # a step's parts, at once",
        'SYMBOL = "tf_blade_task_" + __name__  # the cell holding the task\'s address',
        "task_address = k_parallel.cell_reader(SYMBOL)",
        "", "",
        # The body is the cfunc's own, not a jitted function it calls: Numba optimizes and emits a
        # callee's code on its own and again, linked, in its caller (the column-kinds model's 12
        # parts: 25 s of 51 s of LLVM work). Nor is it under try: Numba's try around a part's many
        # calls took LLVM minutes. An exception it raises is dropped by the cfunc's wrapper, which
        # leaves the result unwritten: run_task then fails the call (what raises is an allocation
        # no size check caught; TF fails those with ResourceExhaustedError).
        "def task(arg, result):",
        f"    {signature}, = _read_args(arg)",
    ] + ["    " + line for line in em.lines] + [
        f"    _write_result(result, ({returns}))",
        "", "",
        "JOB = (types.void(types.voidptr, types.voidptr), task, SYMBOL)",
        "_compiled = []  # the cfunc, once k_parallel.compile_parts has compiled (or loaded) it"]
    if writer is not None:  # the same op in two halves (see _deferred_outputs)
        raw = spec["nodes"][writer]
        low, node = lowerings[raw["op"]], SpecNode(raw)
        em.lines, em.fail_expr = [], "failed_part()"
        plan, rows, width = low.emit_plan(node, [values[r] for r in raw["inputs"]], em, check=False)
        source += ["", "", INTERNAL, f"def plan({signature}):"]
        source += ["    " + line for line in em.lines] + [f"    return ({''.join(v + ', ' for v in plan)}{rows}, {width})"]
        em.lines = []
        low.emit_fill(node, [f"plan[{i}]" for i in range(len(plan))], "out", em)
        source += ["", "", INTERNAL, "def fill_into(plan, out, err):"] + ["    " + line for line in em.lines]
    return source


def _array_type(dtype: str, rank: int) -> str:
    """The Numba type (source) of an array the parts pass: C-ordered, a rank-0 value as shape (1,)."""
    return f'types.Array(from_dtype(np.dtype("{dtype}")), {max(rank, 1)}, "C")'


def _array_types(dtype: str, rank: int) -> List[str]:
    """The Numba types (source) of a value's arrays, in ``_vars`` order (a string is three)."""
    if dtype == "string":
        return [_array_type("int64", rank), _array_type("uint8", 1), _array_type("uint8", 1)]
    return [_array_type(dtype, rank)]


def _run_part(template: str, args: List[str], fn: str = "") -> str:
    """The call of ``template``'s task (through ``fn``, its address, or the template's cell)."""
    return f"{template}.run_task({fn or template + '.task_address()'}, ({''.join(a + ', ' for a in args)}))"


def _is_parallel(spec, part: Part, lowerings) -> bool:
    """Whether ``part`` holds an op that runs in parallel itself: its part takes ``wide`` (this
    call may use every core) and runs alone, never in a parallel group."""
    return any(getattr(lowerings[spec["nodes"][k]["op"]], "parallel", False) for k in part.nodes)


def _is_light(spec, part: Part, lowerings) -> bool:
    """Whether ``part`` does little per-element work on its inputs: it reads their shapes, views
    their data (a numeric column's Reshape) and reads the view's shape, or runs elementwise ops
    (a numeric column's normalizer). Running such parts in parallel would cost more than the
    parts (wide & deep's 13 log1p normalizers: 0.2 ms a call more at 512 rows, when groups ran
    on Numba's TBB)."""
    data = {r for r in part.inputs if const_values(spec, r) is None}  # not constants (parts.lifted_consts)
    # (the inputs and views of them)
    for k in part.nodes:
        node = spec["nodes"][k]
        if not any(ref in data for ref in node["inputs"]):
            continue  # works on shape vectors
        lowering = lowerings[node["op"]]
        if lowering.view_only or lowering.elementwise:
            data.update(f"{k}:{j}" for j in range(len(node["outputs"])))
        elif not lowering.reads_shapes_only:
            return False
    return True


def _header(em: Emitter) -> List[str]:
    return (["# Generated by tf_blade; safe to delete (it is regenerated).",
             "import numpy as np",
             "from numba import njit"]
            + [f"from tf_blade.kernels import {m} as {alias}" for m, alias in sorted(em.kernel_modules.items())]
            + sorted(em.imports)
            + [""] + em.globals)


def _template_module(spec, part: Part, lowerings):
    """(module name, source) of one part template. Templates are modules of their own, named by
    their source: every cluster and model with the same column shape shares one compile."""
    em = Emitter()
    em.kernel("errors", "set_error")
    body = _emit_part(spec, part, em, lowerings)
    source = "\n".join(_header(em) + body + [""])
    return "tf_blade_part_" + hashlib.sha256(source.encode()).hexdigest()[:16], source


def generate(spec: dict):
    """Returns (cluster module source, {module name: source} of the part templates it uses, in
    import order); those must be importable by name before the cluster module runs. The library
    tasks its lowerings ask for (``want_layer``) are its caller's to compile (``compiling_wanted``,
    runtime/compiler.py)."""
    from ..feature_column import SPEC_REWRITES
    lowerings = load_all()
    forget_wanted()  # this cluster's tasks only
    for rewrite in SPEC_REWRITES:
        spec, _ = rewrite(spec)
    parts = decompose(spec)
    template_of: Dict[str, str] = {}
    templates: Dict[str, str] = {}
    for part in parts:
        if part.key not in template_of:
            name, source = _template_module(spec, part, lowerings)
            template_of[part.key] = name
            templates[name] = source
    parallel = parallel_enabled()
    em = Emitter()
    em.kernel("errors", "set_error")
    em.kernel("concat", "concat")

    out_meta = [_meta(spec, ref) for ref in spec["outputs"]]
    deferred = _deferred_outputs(spec, parts, lowerings)
    writes = any(axis is None for _, axis in deferred.values())
    steps = _schedule(parts)
    for members in steps:  # a step is deferred whole or not at all
        if not all(i in deferred for i in members):
            for i in members:
                deferred.pop(i, None)
    values: Dict[str, Value] = {}
    params: List[str] = []
    has_groups = False
    for i, inp in enumerate(spec["inputs"]):
        values[f"in:{i}"] = Value(f"a{i}", numpy_name(inp["dtype"]), inp["rank"])
        params += _vars(values[f"in:{i}"])
    # constants the parts take as inputs (parts.lifted_consts): arrays of this module
    for ref in dict.fromkeys(r for p in parts for r in p.inputs if const_values(spec, r) is not None):
        dtype, rank = _meta(spec, ref)
        value = const_array(producer(spec, ref)[0]["attrs"]["value"]).astype(dtype)
        values[ref] = Value(em.const(value), dtype, rank, const=value)
    # Lines return FAIL on error: body returns empty results, the native entry an error code.
    lines, last_lines = [], []
    for n, members in enumerate(steps):
        out = last_lines if members[0] in deferred else lines
        template = template_of[parts[members[0]].key]
        calls = [_part_args(spec, parts[i], values, lowerings, em) for i in members]
        names = [spec["nodes"][parts[i].nodes[-1]]["name"] for i in members]
        # Light parts (shape reads, views) are called one after another: running their calls in
        # parallel would cost more than the parts.
        if (parallel and len(members) > 1 and not _is_parallel(spec, parts[members[0]], lowerings)
                and not _is_light(spec, parts[members[0]], lowerings)):
            has_groups = True
            # in parallel only if this step's own inputs are large: the call's may be strings it
            # never reads. A number weighs an eighth of a string (a hash ~10 ns, a log1p 1.4 ns):
            # wide & deep's 13 numeric normalizers beside 26 string columns ran 0.2 ms slower in
            # parallel than in turn at 512 and at 4096 rows (53k floats).
            read = [values[r] for i in members for r in parts[i].inputs if values[r].const is None]  # not constants
            strings = " + ".join(f"{v.var}.size" for v in read if v.is_string) or "0"
            numbers = " + ".join(f"{v.var}.size" for v in read if not v.is_string) or "0"
            g = f"g{n}"
            tuples = ["(" + "".join(a + ", " for a in args + [f"errs_{g}[{j}]"]) + ")" for j, args in enumerate(calls)]
            out += [f"wide_{n} = wide and {strings} + ({numbers}) // 8 >= {PARALLEL_MIN_ELEMENTS}",
                    f"errs_{g} = {em.kernel('errors', 'error_rows')}({len(members)}, err)",
                    f"{g} = {template}.run_group({template}.task_address(), wide_{n}, "
                    f"({''.join(t + ', ' for t in tuples)}))",
                    f"failed_{g} = {em.kernel('errors', 'first_failed')}(errs_{g}, err)",
                    f"if failed_{g} >= 0:",
                    f"    k_errors.add_context(err, {em.const(_suffixes(names), 'N')}[failed_{g}])",
                    "    return FAIL"]
            results = [f"{g}[{j}]" for j in range(len(members))]
        else:
            results = []
            for j, (args, name) in enumerate(zip(calls, names)):
                out += [f"r{n}_{j} = {_run_part(template, args + ['err'])}",
                        "if err[0] != 0:",
                        f"    {em.add_context(name)}",
                        "    return FAIL"]
                results.append(f"r{n}_{j}")
        for j, (i, result) in enumerate(zip(members, results)):
            at = 0
            for ref in parts[i].outputs:
                v = Value(f"v{n}_{j}_{at}", *_meta(spec, ref))
                values[ref] = v
                for x in _vars(v):
                    out.append(f"{x} = {result}[{at}]")
                    at += 1
    returns = "".join(f"{values[ref].var}, " for ref in spec["outputs"])
    runs_parts = bool(lines)  # (before ``wide`` joins them)
    if has_groups or any(_is_parallel(spec, p, lowerings) for p in parts):
        lines.insert(0, f"wide = solo and n_elements >= {PARALLEL_MIN_ELEMENTS}")  # (body and entry count them)
    writers = {pos: _direct_writer(spec, parts[i], lowerings, values) for i, (pos, axis) in deferred.items() if axis is None}
    direct = {pos: found for pos, found in writers.items() if found is not None}
    # The inputs the entry's steps read: a direct writer reads its own from the op's pointers.
    by_library = {i for i, (pos, axis) in deferred.items() if axis is None and pos in direct}
    read = {r for i, p in enumerate(parts) if i not in by_library for r in p.inputs} | set(spec["outputs"])
    # Every output planned from the op's inputs and nothing else to run: the entry runs no steps.
    runs_steps = runs_parts or len(direct) < len(spec["outputs"])
    steps, outs = lines + last_lines, f"({returns})"
    if deferred:
        # The entry runs body's steps but the concats and writers that make outputs: it
        # concatenates their pieces (or plans and fills) straight into TF's buffers (one copy fewer).
        piece_out = []
        for k, ref in enumerate(spec["outputs"]):
            part = next((parts[i] for i, (pos, _) in deferred.items() if pos == k), None)
            if k in direct:  # the library computes it (the lowering's emit_direct)
                piece_out.append("0")
            elif part is None:
                piece_out.append(values[ref].var)
            else:
                piece_out.append("(" + "".join(f"np.ascontiguousarray({x}), " for r in part.inputs for x in _vars(values[r])) + ")")
        if writes:  # a writer's plan runs in the entry: it takes this call's ``wide``
            piece_out.append("wide")
        steps, outs = lines, "(" + "".join(p + ", " for p in piece_out) + ")"
    deferred_meta = {pos: (axis, spec["nodes"][parts[i].nodes[-1]]["name"], template_of[parts[i].key],
                           sum(len(_vars(values[r])) for r in parts[i].inputs), _is_parallel(spec, parts[i], lowerings))
                     for i, (pos, axis) in deferred.items()}
    used = [i for i in range(len(spec["inputs"])) if f"in:{i}" in read]
    entry = _native_entry(spec, out_meta, deferred_meta, direct, steps if runs_steps else None, outs, em, used)
    part_templates = sorted(set(template_of.values()))
    compile_parts = em.kernel("parallel", "compile_parts")
    src = _header(em) + [f"import {name}" for name in sorted(templates)]
    # The parts' tasks compile when something will run them: those the entry runs (itself or
    # through a group) at import, all of them when the NumPy bridge first calls body. Compiled at
    # every import, they cost criteo-fc (whose layer the library computes) ~3 s and 37 compiles it
    # never ran, and a new wide & deep 7.8 s for the two layer parts only body runs.
    entry_text = "\n".join(entry)
    # Through k_parallel.compile_parts: when two or more miss Numba's cache, a child process
    # compiles some of them meanwhile (runtime/compile_jobs.py).
    at_import = [name for name in part_templates if f"{name}.task_address()" in entry_text]
    src += ["", "", "def compile_tasks():", '    """The tasks of the parts body runs (the NumPy bridge calls this first)."""',
            f"    {compile_parts}([{', '.join(part_templates)}])"]
    src += ["", "", f"{compile_parts}([{', '.join(at_import)}])  # the entry runs them"] if at_import else []
    counted = [f"a{i}.size" for i, inp in enumerate(spec["inputs"]) if not inp.get("read_variable")] or ["0"]
    src += _fail_function("failed_body", spec, spec["outputs"]) + [
        "", "", "@njit(cache=True, nogil=True)", f"def body({', '.join(params + ['solo', 'err'])}):",
        f"    n_elements = {' + '.join(counted)}"]
    src += _with_fail(lines + last_lines, "failed_body()") + [f"    return ({returns})", ""]
    src += entry
    return "\n".join(src), templates


# Input elements (variables not counted) of the op, and of a group step's parts, from which a group
# runs its parts in parallel, when no other fused call is running (``solo``). Below, waking the workers costs more
# than it saves: criteo-fc (26 columns) at batch 1 and 64 took 0.53/0.64 ms in parallel and
# 0.40/0.49 ms serially; at 512 (53k elements) the two were even, at 4096 parallel won 5.7
# against 8.3 ms. With 2 callers at 512, parallel calls gave 1.6k calls/s and serial ones 1.9-2.1k.
PARALLEL_MIN_ELEMENTS = 32768


def _suffixes(names) -> np.ndarray:
    """The context suffixes of ``names`` (kernels/errors.py), one a row, zero-padded."""
    rows = [context_suffix(name) for name in names]
    out = np.zeros((len(rows), max(len(r) for r in rows)), np.uint8)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def _fail_function(name: str, spec, refs) -> List[str]:
    """``name()``: the empty results of ``refs`` an early return gives. One function called at
    every failing step, not the tuple written out at each (37 steps of 60 outputs made body 2,200
    allocations, which Numba typed and LLVM optimized for ~100 s), and one empty array per dtype
    and rank shared by every slot (wide & deep's 90 slots took 7 s to compile)."""
    shared: Dict[str, str] = {}  # expression -> its variable
    slots = [shared.setdefault(e, f"e{len(shared)}") for r in refs for e in _empties(*_meta(spec, r))]
    return ["", "", INTERNAL, f"def {name}():"] + [f"    {v} = {e}" for e, v in shared.items()] + [
        f"    return ({''.join(v + ', ' for v in slots)})"]


def _with_fail(lines, fail: str) -> List[str]:
    """Indents body lines and fills in their early returns (only those: a node name may contain
    any text)."""
    return ["    " + (f"    return {fail}" if line == "    return FAIL" else line) for line in lines]


def _writer(spec, part: Part):
    """The node of a part that is one op able to write its output into a given buffer (its
    lowering has ``emit_plan`` and ``emit_fill``), or None."""
    work = [k for k in part.nodes if spec["nodes"][k]["op"] != "Const"]
    if len(work) == 1 and is_writer(spec["nodes"][work[0]]["op"]):
        return work[0]
    return None


def _row_sum(spec, part: Part):
    """(writer node, what the output is) when ``part`` is a writer whose [rows, n]
    output only a Sum over axis 1 reads (wide & deep's wide logit): the direct cfunc adds the rows
    up itself, as kernels/reduce.py does (kernels/bag_layer.py's direct spec). Else None."""
    work = [k for k in part.nodes if spec["nodes"][k]["op"] != "Const"]
    if len(work) != 2 or part.outputs != [f"{work[1]}:0"]:
        return None
    total = spec["nodes"][work[1]]
    if total["op"] != "Sum" or total["inputs"][0] != f"{work[0]}:0" or _meta(spec, total["inputs"][0])[1] != 2:
        return None
    axes = const_values(spec, total["inputs"][1])
    if axes is None or {int(a) + 2 if a < 0 else int(a) for a in np.ravel(axes)} != {1}:
        return None
    kind = ROW_SUM_KEEP if total["attrs"].get("keep_dims", False) else ROW_SUM_DROP
    return work[0], kind


def _direct_plan(spec, part: Part, lowerings):
    """(writer node, its inputs: cluster input indices or None for values the op makes, its
    lowering, what the output is) when the native entry can compute ``part`` by the
    lowering's ``emit_direct``: a writer, or a writer and the Sum of its rows. Else None."""
    writer, row_sum = _writer(spec, part), NO_ROW_SUM
    if writer is None:
        found = _row_sum(spec, part)
        if found is None:
            return None
        writer, row_sum = found
    raw = spec["nodes"][writer]
    low = lowerings[raw["op"]]
    inputs = [int(r[3:]) if r.startswith("in:") else None for r in raw["inputs"]]
    metas = [_meta(spec, r) for r in raw["inputs"]]
    if not hasattr(low, "emit_direct") or not low.direct_inputs_ok(SpecNode(raw), inputs, metas):
        return None
    return raw, inputs, low, row_sum


def _direct_writer(spec, part: Part, lowerings, values):
    """``_direct_plan``'s, with the variables in ``values`` of the values the op makes."""
    found = _direct_plan(spec, part, lowerings)
    if found is None:
        return None
    raw, inputs, low, row_sum = found
    return raw, [values[r].var if at is None else at for r, at in zip(raw["inputs"], inputs)], low, row_sum


def _deferred_outputs(spec, parts: List[Part], lowerings) -> Dict[int, tuple]:
    """{part index: (output position, axis or None)} for parts that are one op making a cluster
    output nothing else reads, which the native entry writes straight into TF's buffer: a
    ConcatV2 (with its axis; the feature layer's final concat), concatenated there, or a writer
    op (None; the fused feature layer), planned, then filled there, or a writer and the Sum of
    its rows that the library computes (None; ``_row_sum``)."""
    found = {}
    read = {r for p in parts for r in p.inputs}
    for i, part in enumerate(parts):
        if len(part.outputs) != 1 or part.outputs[0] in read or spec["outputs"].count(part.outputs[0]) != 1:
            continue
        ref = part.outputs[0]
        direct = _direct_plan(spec, part, lowerings)
        if direct is not None and direct[3] != NO_ROW_SUM:  # a writer and its row sum: the library's
            found[i] = (spec["outputs"].index(ref), None)
            continue
        work = [k for k in part.nodes if spec["nodes"][k]["op"] != "Const"]
        if len(work) != 1:
            continue
        node = spec["nodes"][work[0]]
        if _writer(spec, part) is not None and _meta(spec, ref)[1] == 2:
            found[i] = (spec["outputs"].index(ref), None)
            continue
        axis = const_values(spec, node["inputs"][-1]) if node["op"] == "ConcatV2" else None
        if axis is None or any(r.startswith("in:") for r in part.inputs) or node["outputs"][0][0] == STRING:
            continue
        if node["inputs"][:-1] != part.inputs:  # the pieces are the part's inputs: not a constant, none twice
            continue
        rank = node["outputs"][0][1]
        axis = int(axis[0])
        found[i] = (spec["outputs"].index(ref), axis + rank if axis < 0 else axis)
    return found


def _schedule(parts: List[Part]) -> List[List[int]]:
    """Parts in steps: a step is parts that depend on none of each other and share a template
    (the columns of a layer), in an order that respects every dependency."""
    level: List[int] = []
    for deps in part_deps(parts):  # parts come topologically ordered
        level.append(1 + max((level[d] for d in deps), default=-1))
    steps: Dict[tuple, List[int]] = {}
    for i, p in enumerate(parts):
        steps.setdefault((level[i], p.key), []).append(i)
    return [members for _, members in sorted(steps.items(), key=lambda kv: (kv[0][0], kv[1][0]))]


def _part_args(spec, part: Part, values, lowerings, em: Emitter) -> List[str]:
    args = [x for ref in part.inputs for x in _vars(values[ref])]
    for k in part.nodes:
        raw = spec["nodes"][k]
        # a bare literal would also give each group call (a tuple of them) its own compile
        low = lowerings[raw["op"]]
        args += [Emitter.int64(raw["attrs"][a]) for a in low.runtime_attrs]
        args += [em.const(message_bytes(text), "N") for text in low.texts(raw, spec)]
        args += [em.const(low.attr_array(raw, spec, a)) for a in low.array_attrs]
    return args + (["wide"] if _is_parallel(spec, part, lowerings) else [])


def _native_entry(spec, out_meta, deferred, direct, steps, outs, em, used) -> List[str]:
    """The C-callable wrapper: raw pointers -> arrays, body's ``steps`` (None: nothing to run)
    making ``outs``, outputs into TF-allocated tensors. The steps are written out here, not
    called: a called function's code is optimized and emitted again in every caller (Numba
    links callees' IR): a called ``pieces()`` cost wide & deep 11 s of its 41 s of LLVM time.
    ``deferred``: {output position: (axis, node name, template, number of piece values, whether
    the template takes ``wide``)} of outputs concatenated (axis) or planned and filled (axis
    None) here, in place; ``direct``: {output position: (writer node, its inputs: cluster input
    indices or the variables of values the steps made, its lowering, what the output is: the
    writer's or the Sum of its rows)} of those the lowering's library code computes from
    input pointers (no template plan, no fill_into). ``used``: the inputs the steps read, the
    only ones made arrays (a string input's ids are an allocation a call).
    ``em``: the cluster module's, for the constants and kernels of those."""
    lines = [
        "",
        "from numba import carray",
        "from tf_blade.runtime.abi import ENTRY_SIG, MAX_RANK, call_alloc, copy_to, ptr_from_int",
        "from tf_blade.kernels.strings import TSTRING_BYTES",
        "from tf_blade.runtime.cfunc_cache import cached_cfunc",
        "",
        "",
        "@cached_cfunc(ENTRY_SIG)",
        "def entry(in_ptrs, in_shapes, ctx, alloc, errbuf):",
        "    err = carray(errbuf, (1024,))",
    ]
    sizes = []
    for i, inp in enumerate(spec["inputs"] if steps is not None else ()):
        rank = inp["rank"]
        dims = [f"in_shapes[{i} * MAX_RANK + {d}]" for d in range(rank)] or ["1"]
        if not inp.get("read_variable"):
            sizes.append(" * ".join(dims))
        if i not in used:
            continue
        shape = "(" + ", ".join(dims) + ",)"
        dtype = numpy_name(inp["dtype"])
        if dtype == "string":
            count = " * ".join(dims)
            lines += [  # TF's tstrings in place (kernels/strings.py); no pool bytes
                f"    n{i} = {count}",
                f"    a{i}_off = carray(ptr_from_int(in_ptrs[{2 * i}], np.uint8), (n{i} * TSTRING_BYTES,))",
                f"    a{i}_dat = a{i}_off[:0]",
                f"    a{i} = np.arange(n{i}).reshape({shape})",
            ]
        else:
            lines.append(f"    a{i} = carray(ptr_from_int(in_ptrs[{2 * i}], np.{dtype}), {shape})")
    if steps is not None:
        # The native op says in the spare last pointer slot whether other calls run (or ran
        # alongside one lately): then this one keeps to its thread, the cores are busy already.
        # (A direct writer reads that slot itself.)
        lines.append(f"    solo = in_ptrs[{2 * len(spec['inputs'])}] == 0")
        lines.append(f"    n_elements = {' + '.join(sizes) or '0'}")
        lines += _with_fail(steps, "1") + [f"    outs = {outs}"]
    if len(direct) < len(out_meta):
        lines.append("    dims = np.zeros(MAX_RANK, np.int64)  # a rank-0 output writes no dim; the check below reads dims[0]")
    for k, (dtype, rank) in enumerate(out_meta):
        if k in direct:  # a writer reading only the op's inputs: the library computes it from their pointers
            raw, inputs, low, row_sum = direct[k]
            em.lines = []
            rc = low.emit_direct(SpecNode(raw), inputs, [inp["rank"] for inp in spec["inputs"]], k,
                                 PARALLEL_MIN_ELEMENTS, em, row_sum)
            lines += ["    " + line for line in em.lines]
            lines += [f"    if {rc} != 0:",
                      f"        if {rc} == 1:",  # named as TF names it: the layer's node, not its Sum
                      f"            {em.add_context(raw['name'])}",
                      f"        return {rc}"]
            continue
        if k in deferred and deferred[k][0] is None:  # a writer: planned, then filled in TF's buffer
            _, name, template, n_args, takes_wide = deferred[k]
            args = [f"outs[{k}][{j}]" for j in range(n_args)] + ([f"outs[{len(out_meta)}]"] if takes_wide else [])
            lines += [f"    plan{k} = {template}.plan({', '.join(args + ['err'])})",
                      "    if err[0] != 0:",
                      f"        {em.add_context(name)}",
                      "        return 1"]
            dims = [f"plan{k}[-2]", f"plan{k}[-1]"]
            nonempty = f"plan{k}[-2] * plan{k}[-1] > 0"
            fill = (f"{template}.fill_into(plan{k}, carray(ptr_from_int(addr, np.{dtype}), (plan{k}[-2], plan{k}[-1])), err)\n"
                    f"        if err[0] != 0:\n"
                    f"            {em.add_context(name)}\n"
                    f"            return 1")
        elif k in deferred:  # concatenated here, straight into TF's buffer
            axis, name = deferred[k][:2]
            lines += [f"    table{k} = k_concat.part_table(outs[{k}])",  # outs outlives it: keep_alive below
                      f"    shape{k}, outer{k}, width{k} = k_concat.concat_shape(table{k}, np.int64({axis}), err)",
                      "    if err[0] != 0:",
                      f"        {em.add_context(name)}",
                      "        return 1"]
            dims = [f"shape{k}[{d}]" for d in range(rank)]
            nonempty = f"outer{k} * width{k} > 0"
            into = f"carray(ptr_from_int(addr, np.{dtype}), (outer{k}, width{k}))"
            if dtype in WIDE_DTYPES and parallel_enabled():  # its rows copied on both cores when the op runs alone
                want_task(("concat", dtype), WIDE_JOBS[dtype])
                fill = f"k_concat.concat_into_wide(table{k}, {into}, solo and outer{k} * width{k} >= {PARALLEL_MIN_ELEMENTS})"
            else:
                fill = f"k_concat.concat_into(table{k}, {into})"
            fill += "\n        k_concat.keep_alive(outs)"
        else:
            lines.append(f"    o{k} = outs[{k}]")
            dims = [f"o{k}.shape[{d}]" for d in range(rank)]
            nonempty = f"o{k}.size > 0"
            fill = f"copy_to(addr, o{k}.ravel())"
        lines += [f"    dims[{d}] = {dim}" for d, dim in enumerate(dims)]
        lines += [f"    addr = call_alloc(alloc, ctx, {k}, {rank}, dims.ctypes.data)",
                  "    if addr == 0 or dims[0] < 0:  # reading dims keeps it alive across the call",
                  "        return 2",
                  f"    if {nonempty}:",
                  f"        {fill}"]
    lines += ["    return 0", ""]
    return lines

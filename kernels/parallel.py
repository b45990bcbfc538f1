"""Blocks of a kernel's work on TensorFlow's own intra-op threads.

The native op (tf_blade/runtime/blade_op.cc) exports ``blade_parallel_for(fn, n, arg)``: it runs
``fn(arg, begin, end)`` over blocks [0, n), one at a time, on the calling thread and the intra-op
pool of the op being computed (each claims the next block) and returns when all are done. A
kernel hands over its arguments as one tuple on its stack (``run_blocks``); ``fn`` is a cfunc
that reads them back (``args_reader``). A group of parts of one template (a layer's columns) runs
the same way through ``blade_run_tasks`` (``group_caller``): part i is block i.
One pool for TF's ops and ours: no second set of threads spinning beside TF's, and no parallel
(parfor) compile.

Generated code stays cacheable: it names the two runners and each task's address (a cell,
``task_cell``) by symbol, which the JIT links to this process's addresses when it loads the code.
Until the native op is loaded, the runners decline (return 1) and kernels run their blocks
themselves; so does a kernel whose task's cell is still 0 (its cfunc never compiled).
"""
import contextlib
import ctypes

import llvmlite.binding as ll
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from ..runtime.cfunc_cache import cached_cfunc

RUNNER = "blade_parallel_for"
TASKS_RUNNER = "blade_run_tasks"  # (task, n, args, args stride, results, results stride): group_caller's
_cells = {}


def install_runners(parallel_for: int, run_tasks: int):
    ll.add_symbol(RUNNER, parallel_for)
    ll.add_symbol(TASKS_RUNNER, run_tasks)


_DECLINE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(lambda fn, n, arg: 1)
_DECLINE_TASKS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_void_p, ctypes.c_int64)(lambda task, n, args, a, results, r: 1)
if ll.address_of_symbol(RUNNER) is None:
    install_runners(ctypes.cast(_DECLINE, ctypes.c_void_p).value, ctypes.cast(_DECLINE_TASKS, ctypes.c_void_p).value)


def task_cell(symbol: str) -> ctypes.c_int64:
    """The int64 the JIT links ``symbol`` to: a task's cfunc address, 0 until it is set."""
    if symbol not in _cells:
        _cells[symbol] = ctypes.c_int64(0)
        ll.add_symbol(symbol, ctypes.addressof(_cells[symbol]))
    return _cells[symbol]


def compile_task(signature, function, symbol: str):
    """``function`` compiled (or loaded from Numba's cache) as a cfunc of ``signature``, its
    address stored in ``task_cell(symbol)``; the caller keeps the cfunc alive."""
    compiled = cached_cfunc(signature, nogil=True)(function)
    task_cell(symbol).value = compiled.address
    return compiled


def compile_tasks(jobs: dict) -> dict:
    """``compile_task`` of each of ``jobs`` ({key: (signature, function, symbol)}): {key: cfunc}.
    When two or more miss Numba's disk cache, a child process compiles some of them meanwhile
    (tf_blade/runtime/compile_jobs.py), taking them from the front of ``jobs`` as this process
    takes them from the back, and this one then loads them from the cache."""
    with compiling_tasks(jobs) as compiled:
        pass
    return compiled


_children = []  # the compile child running now, if any


@contextlib.contextmanager
def compiling_tasks(jobs: dict):
    """``compile_tasks(jobs)`` around a block of other work in this process: the child starts on the
    jobs before the block and this process takes its share after it. Yields the dict of cfuncs,
    complete once the block has exited without raising (when it raises, the child is killed)."""
    from ..runtime import compile_jobs
    # decided once, not per job; one child at a time: the parts a cluster's module compiles at
    # import (compile_parts) do so inside compiling_wanted's block, beside its child
    child_may_help = len(jobs) >= 2 and compile_jobs.enabled() and not _children
    missing = [key for key, (signature, function, _) in jobs.items()
               if child_may_help and compile_jobs.missing_from_cache(signature, function)]
    compiled = {}
    if len(missing) >= 2:
        with compile_jobs.Child([jobs[key] for key in missing]) as child:  # it takes them from the front
            _children.append(child)
            try:
                yield compiled
            finally:
                _children.remove(child)
            for index in reversed(range(len(missing))):
                if child.claim(index):
                    compiled[missing[index]] = compile_task(*jobs[missing[index]])
    else:
        yield compiled
    compiled.update({key: compile_task(*job) for key, job in jobs.items() if key not in compiled})


def compile_parts(modules) -> None:
    """The task of each generated part module (its ``JOB``) not compiled yet, through ``compile_tasks``:
    a cold multi-part cluster compiles two parts at a time. Each cfunc is kept in its module's
    ``_compiled``, as the module's own ``compile_task`` keeps it."""
    todo = {module.__name__: module for module in modules if not module._compiled}
    for name, compiled in compile_tasks({name: module.JOB for name, module in todo.items()}).items():
        todo[name]._compiled.append(compiled)


def cell_reader(symbol: str):
    """An intrinsic ``read()``: the value of ``task_cell(symbol)`` now."""
    task_cell(symbol)

    @intrinsic
    def read(typingctx):
        def codegen(context, builder, sig, llargs):
            try:
                cell = builder.module.get_global(symbol)
            except KeyError:
                cell = cgutils.add_global_variable(builder.module, ir.IntType(64), symbol)  # external: linked by name
            return builder.load(cell)

        return types.int64(), codegen

    return read


def _blocks_types(fn, n, args) -> bool:
    """Whether (fn, n, args) are what a blocks task is called with: an address, a count, a tuple."""
    return isinstance(fn, types.Integer) and isinstance(n, types.Integer) and isinstance(args, types.BaseTuple)


def _on_stack(builder, value):
    """``value`` copied onto the calling function's stack, as the i8* a task reads it from."""
    return builder.bitcast(cgutils.alloca_once_value(builder, value), ir.IntType(8).as_pointer())


@intrinsic
def run_blocks(typingctx, fn, n, args):
    """blade_parallel_for(fn, n, &args): True when the blocks ran, False when the caller must run
    them (no task, or no native op). ``args`` is borrowed: the caller keeps it alive."""
    if not _blocks_types(fn, n, args):
        return None

    def codegen(context, builder, sig, llargs):
        address, count, value = llargs
        i8p, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
        slot = _on_stack(builder, value)
        runner = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i8p, i64, i8p]), RUNNER)
        ran = cgutils.alloca_once_value(builder, cgutils.false_bit)
        with builder.if_then(builder.icmp_signed("!=", address, ir.Constant(i64, 0))):
            rc = builder.call(runner, [builder.inttoptr(address, i8p), context.cast(builder, count, sig.args[1], types.int64),
                                       slot])
            builder.store(builder.icmp_signed("==", rc, ir.Constant(i64, 0)), ran)
        return builder.load(ran)

    return types.boolean(fn, n, args), codegen


@intrinsic
def run_blocks_here(typingctx, fn, n, args):
    """fn(&args, 0, n) on this thread: the task called through its address, so the caller links
    none of its code. ``args`` is borrowed, as for run_blocks."""
    if not _blocks_types(fn, n, args):
        return None

    def codegen(context, builder, sig, llargs):
        address, count, value = llargs
        i8p, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
        task = builder.inttoptr(address, ir.FunctionType(ir.VoidType(), [i8p, i64, i64]).as_pointer())
        builder.call(task, [_on_stack(builder, value), ir.Constant(i64, 0), context.cast(builder, count, sig.args[1], types.int64)])
        return context.get_dummy_value()

    return types.none(fn, n, args), codegen


def _castable(given, wanted) -> bool:
    """Whether ``given`` becomes ``wanted`` by Numba's no-op casts: equal, or an array of the same
    dtype and rank, C-ordered or for any layout, read-only where a writable one is wanted (the
    NumPy bridge's inputs; no kernel writes its inputs), element by element in a tuple."""
    if given == wanted:
        return True
    if isinstance(given, types.Array) and isinstance(wanted, types.Array):
        return (given.dtype == wanted.dtype and given.ndim == wanted.ndim
                and (given.layout == wanted.layout or wanted.layout == "A"))
    if isinstance(given, types.BaseTuple) and isinstance(wanted, types.BaseTuple):
        return len(given) == len(wanted) and all(_castable(g, w) for g, w in zip(given, wanted))
    return False


def _cast(context, builder, given, wanted, value):
    """``value`` of type ``given`` as a ``wanted`` (``_castable``): the same bits."""
    if given == wanted:
        return value
    if isinstance(given, types.BaseTuple):
        items = [_cast(context, builder, g, w, builder.extract_value(value, i))
                 for i, (g, w) in enumerate(zip(given, wanted))]
        return context.make_tuple(builder, wanted, items)
    return context.cast(builder, value, given, wanted)


def _mismatch(what, given, wanted):
    return TypingError(f"tf_blade: {what} of type {given} where the task takes {wanted} (a lowering's "
                       "result differs from the dtype and rank its spec declares)")


def _result_slot(context, result_type):
    """The LLVM type a task's result is stored in: the value, then a byte the writer sets to 1."""
    return ir.LiteralStructType([context.get_value_type(result_type), ir.IntType(8)])


def task_caller(result_type, args_type=None, raised_message=None):
    """An intrinsic ``call(fn, args)``: fn(&args, &result) on this thread, for a task that stores
    its ``result_type`` value there (``result_writer``); returns that value (the task's reference,
    handed over). ``args`` is borrowed, as for run_blocks; with ``args_type`` it is cast to that
    (``_castable``), the tuple the task reads. The result starts zeroed: a task that fails (sets
    err) returns without writing it, and the caller gets empty arrays that own nothing (a null
    meminfo, which NRT's incref and decref skip).

    A cfunc that raises prints the exception and returns, so its result is not written either.
    With ``raised_message``, that case writes the message into the task's error buffer, the last
    of ``args``, unless the task wrote an error of its own."""
    @intrinsic
    def call(typingctx, fn, args):
        if not isinstance(fn, types.Integer) or not isinstance(args, types.BaseTuple):
            return None
        if args_type is not None and not _castable(args, args_type):
            raise _mismatch("arguments", args, args_type)
        err_type = args[-1] if len(args) else None
        if raised_message is not None and not (isinstance(err_type, types.Array) and err_type.dtype == types.uint8
                                               and err_type.ndim == 1 and err_type.layout == "C"):
            raise TypingError(f"tf_blade: a task whose exceptions fail it takes its error buffer last, not {args}")

        def codegen(context, builder, sig, llargs):
            address, value = llargs
            if args_type is not None:
                value = _cast(context, builder, args, args_type, value)
            i8p = ir.IntType(8).as_pointer()
            slot = cgutils.alloca_once(builder, _result_slot(context, result_type), zfill=True)
            task = builder.inttoptr(address, ir.FunctionType(ir.VoidType(), [i8p, i8p]).as_pointer())
            builder.call(task, [_on_stack(builder, value), builder.bitcast(slot, i8p)])
            if raised_message is not None:
                _fail_unwritten(context, builder, slot, err_type, builder.extract_value(llargs[1], len(args) - 1),
                                raised_message)
            return builder.load(cgutils.gep_inbounds(builder, slot, 0, 0))

        return result_type(fn, args), codegen
    return call


def group_caller(result_type, args_type, raised_message):
    """An intrinsic ``call(fn, wide, calls)``: the task at ``fn`` once per argument tuple of
    ``calls`` (a tuple of them, each castable to ``args_type``, its own error buffer last), as
    ``task_caller`` calls it once; returns the tuple of their results. With ``wide`` the native op
    runs them on TF's intra-op threads (``blade_run_tasks``, one task a block); else, or when the
    runner declines (no native op), one after another on this thread. Each task reports into its
    own error buffer; a result is valid only if its buffer holds no error."""
    @intrinsic
    def call(typingctx, fn, wide, calls):
        if not isinstance(fn, types.Integer) or not isinstance(calls, types.BaseTuple) or len(calls) == 0:
            return None
        for args in calls:
            if not _castable(args, args_type):
                raise _mismatch("arguments", args, args_type)

        def codegen(context, builder, sig, llargs):
            address, run_wide, value = llargs
            i8p, i64, n = ir.IntType(8).as_pointer(), ir.IntType(64), len(calls)
            args_llty, slot_llty = context.get_value_type(args_type), _result_slot(context, result_type)
            arg_array = cgutils.alloca_once(builder, ir.ArrayType(args_llty, n))
            for i, given in enumerate(calls):
                builder.store(_cast(context, builder, given, args_type, builder.extract_value(value, i)),
                              cgutils.gep_inbounds(builder, arg_array, 0, i))
            slots = cgutils.alloca_once(builder, ir.ArrayType(slot_llty, n), zfill=True)
            task_type = ir.FunctionType(ir.VoidType(), [i8p, i8p])
            task = builder.inttoptr(address, task_type.as_pointer())
            ran = cgutils.alloca_once_value(builder, cgutils.false_bit)
            with builder.if_then(context.cast(builder, run_wide, sig.args[1], types.boolean)):
                runner = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(i64, [i8p, i64, i8p, i64, i8p, i64]), TASKS_RUNNER)
                strides = [ir.Constant(i64, context.get_abi_sizeof(t)) for t in (args_llty, slot_llty)]
                rc = builder.call(runner, [builder.bitcast(task, i8p), ir.Constant(i64, n),
                                           builder.bitcast(arg_array, i8p), strides[0], builder.bitcast(slots, i8p),
                                           strides[1]])
                builder.store(builder.icmp_signed("==", rc, ir.Constant(i64, 0)), ran)
            with builder.if_then(builder.not_(builder.load(ran))):
                with cgutils.for_range(builder, ir.Constant(i64, n)) as loop:
                    builder.call(task, [builder.bitcast(cgutils.gep_inbounds(builder, arg_array, 0, loop.index), i8p),
                                        builder.bitcast(cgutils.gep_inbounds(builder, slots, 0, loop.index), i8p)])
            last = len(args_type) - 1  # the task's error buffer
            with cgutils.for_range(builder, ir.Constant(i64, n)) as loop:
                err = builder.load(cgutils.gep_inbounds(builder, arg_array, 0, loop.index, last))
                _fail_unwritten(context, builder, cgutils.gep_inbounds(builder, slots, 0, loop.index), args_type[last],
                                err, raised_message)
            results = [builder.load(cgutils.gep_inbounds(builder, slots, 0, i, 0)) for i in range(n)]
            return context.make_tuple(builder, sig.return_type, results)

        return types.UniTuple(result_type, len(calls))(fn, wide, calls), codegen
    return call


def _fail_unwritten(context, builder, slot, err_type, err, message):
    """Writes ``message`` into the task's error buffer ``err`` when its result ``slot`` was not
    written: the task raised (its cfunc's wrapper printed the exception and returned)."""
    written = builder.load(cgutils.gep_inbounds(builder, slot, 0, 1))
    with builder.if_then(cgutils.is_null(builder, written), likely=False):
        context.compile_internal(builder, _raised_error_writer(message), types.void(err_type), [err])


def _raised_error_writer(message):
    from .errors import set_error

    def write(err):
        set_error(err, message)  # a no-op when the task failed with an error of its own
    return write


def result_writer(result_type):
    """An intrinsic ``write(ptr, value)``: stores a task's ``result_type`` value (or one castable
    to it, ``_castable``) where its caller (``task_caller``) reads it, with a reference of its own
    for the caller, and marks it written."""
    @intrinsic
    def write(typingctx, ptr, value):
        if ptr != types.voidptr:
            return None
        if not _castable(value, result_type):
            raise _mismatch("a result", value, result_type)

        def codegen(context, builder, sig, llargs):
            stored = _cast(context, builder, value, result_type, llargs[1])
            context.nrt.incref(builder, result_type, stored)
            slot = builder.bitcast(llargs[0], _result_slot(context, result_type).as_pointer())
            builder.store(stored, cgutils.gep_inbounds(builder, slot, 0, 0))
            builder.store(ir.Constant(ir.IntType(8), 1), cgutils.gep_inbounds(builder, slot, 0, 1))
            return context.get_dummy_value()

        return types.none(ptr, value), codegen
    return write


def args_reader(tuple_type):
    """An intrinsic ``read(arg)``: the ``tuple_type`` value that ``run_blocks`` put at ``arg``
    (a new reference, so the task's own refcounting balances)."""

    @intrinsic
    def read(typingctx, arg):
        if arg != types.voidptr:
            return None

        def codegen(context, builder, sig, llargs):
            llty = context.get_value_type(tuple_type)
            value = builder.load(builder.bitcast(llargs[0], llty.as_pointer()))
            context.nrt.incref(builder, tuple_type, value)
            return value

        return tuple_type(arg), codegen

    return read

"""Software prefetch of table rows: embedding lookups are random reads from tables far larger
than the caches, so the time goes to memory latency unless the next rows are requested early."""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_LINE_BYTES = 64


@intrinsic
def prefetch_row(typingctx, table, row):
    """Asks for every cache line of ``table[row, :]`` (a C-contiguous 2-D array); no-op semantics."""
    if not isinstance(table, types.Array) or table.ndim != 2 or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        row_ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], zero], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        base = builder.bitcast(row_ptr, i8p)
        row_bytes = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(aryty.dtype)))
        width = builder.extract_value(ary.shape, 1)
        total = builder.mul(row_bytes, width)
        with cgutils.for_range_slice(builder, zero, total, context.get_constant(types.intp, _LINE_BYTES)) as (offset, _):
            # read access, keep in all cache levels, data cache
            builder.call(fn, [builder.gep(base, [offset]), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(table, row), codegen

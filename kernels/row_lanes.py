"""Table rows added LANES elements at a time, in LLVM vector registers: up to four (pool_lanes) or
a whole longer run (pool_run_lanes).

reduce_runs pools most multi-hot rows (1..4 ids) in a loop over the row's width. Numba cannot tell
LLVM that the output and the table never overlap, so that loop was compiled with run-time overlap
checks and scalar or scatter stores (vscatterqps on AVX-512), around 13 ns a run on this machine.
Here the rows are loaded as vectors, added in TF's order and stored once: each lane is the same
IEEE operation as before, so the bits are unchanged. 26 Criteo columns of 512 rows, dim 16, pooled
on one thread: 0.27 -> 0.18-0.20 ms. Keras's pooled embeddings (pool_rows, rows of up to 4 ids)
had the same loop, summing into a scratch row copied out: 26 columns of [512, 4] ids, 0.28 -> 0.12 ms.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

LANES = 8  # one AVX register of float32; LLVM splits or joins registers for other widths


def _lanes_at(context, builder, array_type, array, row, column, vector):
    """A pointer to ``vector`` at array[row, column] (C order: the row's elements are adjacent)."""
    view = context.make_array(array_type)(context, builder, array)
    offset = builder.add(builder.mul(row, builder.extract_value(view.strides, 0)),
                         builder.mul(column, builder.extract_value(view.strides, 1)))
    byte = ir.IntType(8).as_pointer()
    return builder.bitcast(builder.gep(builder.bitcast(view.data, byte), [offset]), vector.as_pointer())


def _splat(builder, value, vector):
    """``value`` in every lane of ``vector``."""
    lanes = builder.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(lanes, lanes, ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))


def _check_arrays(name, out, table):
    """Both 2-D, C-ordered, of one float dtype: the lanes are read and written as that dtype's vectors."""
    for array in (out, table):
        if not (isinstance(array, types.Array) and array.ndim == 2 and array.layout == "C"
                and isinstance(array.dtype, types.Float)):
            raise TypingError(f"{name}: needs 2-D C-ordered float arrays, got {array}")
    if out.dtype != table.dtype:
        raise TypingError(f"{name}: the output's dtype {out.dtype} is not the table's {table.dtype}")


def _pooler(name, from_zero):
    """The intrinsic ``name``: see pool_lanes and pool_lanes_from_zero."""
    def typer(typingctx, out, seg, out_column, table, a, b, c, d, n, scale, column):
        if not isinstance(n, types.IntegerLiteral) or not 1 <= n.literal_value <= 4:
            return None
        _check_arrays(name, out, table)
        count = n.literal_value

        def codegen(context, builder, sig, args):
            out_, table_, scale_ = args[0], args[3], args[9]
            element = context.get_value_type(sig.args[3].dtype)
            vector = ir.VectorType(element, LANES)
            align = context.get_abi_sizeof(element)  # unaligned loads and stores

            def index(k):
                return context.cast(builder, args[k], sig.args[k], types.intp)
            total = ir.Constant(vector, [ir.Constant(element, 0.0)] * LANES) if from_zero else None
            for k in range(4, 4 + count):
                v = builder.load(_lanes_at(context, builder, sig.args[3], table_, index(k), index(10), vector), align=align)
                total = v if total is None else builder.fadd(total, v)
            if from_zero or count > 1:
                lanes = _splat(builder, context.cast(builder, scale_, sig.args[9], sig.args[3].dtype), vector)
                total = builder.fdiv(total, lanes) if from_zero else builder.fmul(total, lanes)
            builder.store(total, _lanes_at(context, builder, sig.args[0], out_, index(1), index(2), vector), align=align)
            return context.get_dummy_value()
        return types.none(out, seg, out_column, table, a, b, c, d, n, scale, column), codegen
    typer.__name__ = name
    return intrinsic(typer)


# out[seg, out_column + i] = (((table[a] + table[b]) + table[c]) + table[d])[column + i] * scale for
# i < LANES, over the first ``n`` (a literal 1..4) of the rows; one row is stored as read, unscaled
# (SparseSegment*'s order, reduce_runs). Both arrays must be 2-D and C-ordered; the caller keeps
# every index in bounds.
pool_lanes = _pooler("pool_lanes", from_zero=False)
# The same from +0.0 and divided by ``scale`` (TF's Mean over the middle axis of a gather, and
# its Sum with scale 1: x / 1 is x): ((((+0.0 + table[a]) + table[b]) + ...) / scale (pool_rows).
pool_lanes_from_zero = _pooler("pool_lanes_from_zero", from_zero=True)


@intrinsic
def pool_run_lanes(typingctx, out, seg, out_column, table, rows, start, first_end, end, how, scale, column):
    """A run of more than four rows, lanes ``column``.. of ``table`` (LANES elements), in TF's
    order for long segments (sparse_segment_reduction.py): acc = table[rows[start]], plus each row to
    ``first_end``, plus each block of eight after it summed on its own; stored into out[seg,
    out_column..] as it is (``how`` 0), times ``scale`` (1) or divided by it (2). The loops are
    written here, the sums kept in registers: as Numba loops over a scratch row they were ~1.1 s
    of reduce_runs' 2 s cold compile (LLVM vectorizing each behind run-time overlap checks). The
    caller keeps every index in bounds and end - first_end a multiple of 8."""
    _check_arrays("pool_run_lanes", out, table)
    if not (isinstance(rows, types.Array) and rows.ndim == 1 and isinstance(rows.dtype, types.Integer)):
        raise TypingError(f"pool_run_lanes: rows must be a 1-D integer array, got {rows}")

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        element = context.get_value_type(sig.args[3].dtype)
        vector = ir.VectorType(element, LANES)
        align = context.get_abi_sizeof(element)  # unaligned loads and stores

        def index(k):
            return context.cast(builder, args[k], sig.args[k], types.intp)
        rows_type = sig.args[4]
        row_ids = context.make_array(rows_type)(context, builder, args[4])
        column_ = index(10)

        def load_row(k):  # table[rows[k], column:column + LANES]
            row = builder.load(cgutils.get_item_pointer(context, builder, rows_type, row_ids, [k]))
            row = context.cast(builder, row, rows_type.dtype, types.intp)
            return builder.load(_lanes_at(context, builder, sig.args[3], args[3], row, column_, vector), align=align)

        start_, first_end, end_ = index(5), index(6), index(7)  # positions in rows
        acc = cgutils.alloca_once(builder, vector)
        tmp = cgutils.alloca_once(builder, vector)
        builder.store(load_row(start_), acc)
        with cgutils.for_range_slice(builder, builder.add(start_, ir.Constant(intp, 1)), first_end,
                                     ir.Constant(intp, 1)) as (k, _):
            builder.store(builder.fadd(builder.load(acc), load_row(k)), acc)
        with cgutils.for_range_slice(builder, first_end, end_, ir.Constant(intp, 8)) as (b, _):
            builder.store(load_row(b), tmp)
            for j in range(1, 8):
                builder.store(builder.fadd(builder.load(tmp), load_row(builder.add(b, ir.Constant(intp, j)))), tmp)
            builder.store(builder.fadd(builder.load(acc), builder.load(tmp)), acc)
        total = builder.load(acc)
        lanes = _splat(builder, context.cast(builder, args[9], sig.args[9], sig.args[3].dtype), vector)
        how_to_scale = index(8)
        scaled = builder.select(builder.icmp_signed("==", how_to_scale, ir.Constant(intp, 1)),
                                builder.fmul(total, lanes), builder.fdiv(total, lanes))
        result = builder.select(builder.icmp_signed("==", how_to_scale, ir.Constant(intp, 0)), total, scaled)
        builder.store(result, _lanes_at(context, builder, sig.args[0], args[0], index(1), index(2), vector), align=align)
        return context.get_dummy_value()
    return types.none(out, seg, out_column, table, rows, start, first_end, end, how, scale, column), codegen

"""ConcatV2: every part viewed as [outer, width_i]; rows are laid side by side."""
import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic, overload
from numba.np.arrayobj import _empty_nd_impl

from ..runtime.abi import ptr_from_int
from .errors import set_error
from .parallel import args_reader, cell_reader, run_blocks


@njit(cache=True, nogil=True)
def mismatch(err, d, first, k, other):
    """TF's error for input ``k`` (shape ``other``) differing from input 0 (``first``) in dim ``d``."""
    set_error(err, "ConcatOp : Dimension ", d, " in both shapes must be equal: shape[0] = ", first, " vs. shape[", k,
              "] = ", other)


# Parts travel as a part table, one int64 row a part: its data address, its shape, then its
# strides in bytes (part_table). A tuple's length is part of its Numba type: concat_shape,
# concat_into and concat took tuples and compiled again for every new number of parts (~1.2 s
# of a new model's first optimize each time). A table types by rank and the output's dtype only.
@intrinsic
def part_table(typingctx, parts):
    """The part table of ``parts``, a tuple of arrays of one dtype and rank (any layout): an int64
    array [len(parts), 1 + 2 * rank]. It holds addresses, not references: the caller keeps
    ``parts`` alive until the kernels that read the table return (keep_alive)."""
    if not (isinstance(parts, types.BaseTuple) and len(parts) > 0
            and all(isinstance(p, types.Array) for p in parts)
            and len({(p.dtype, p.ndim) for p in parts}) == 1):
        raise TypingError(f"part_table takes a tuple of arrays of one dtype and rank, not {parts}")
    rank = parts[0].ndim
    table_type = types.Array(types.int64, 2, "C")

    def codegen(context, builder, sig, args):
        width = 1 + 2 * rank
        table = _empty_nd_impl(context, builder, table_type, [context.get_constant(types.intp, len(parts)),
                                                              context.get_constant(types.intp, width)])
        for k, (part_type, value) in enumerate(zip(parts, cgutils.unpack_tuple(builder, args[0]))):
            part = context.make_array(part_type)(context, builder, value)
            row = [builder.ptrtoint(part.data, ir.IntType(64))]
            row += cgutils.unpack_tuple(builder, part.shape) + cgutils.unpack_tuple(builder, part.strides)
            for j, field in enumerate(row):
                builder.store(field, builder.gep(table.data, [context.get_constant(types.intp, k * width + j)]))
        return impl_ret_new_ref(context, builder, table_type, table._getvalue())
    return table_type(parts), codegen


@intrinsic
def keep_alive(typingctx, values):
    """Nothing, but a use of ``values``: Numba frees a value after its last use, and a part table
    only points into its parts."""
    return types.none(values), lambda context, builder, sig, args: context.get_dummy_value()


@njit(cache=True, nogil=True)
def concat_shape(table, axis, err):
    """Checks the parts of ``table`` as TF does; returns (output shape vector, outer, total
    width): the output viewed as [outer, total width]."""
    rank = (table.shape[1] - 1) // 2
    shape = np.empty(rank, np.int64)
    if axis < 0 or axis >= rank:  # the lowering has already added rank to a negative axis
        set_error(err, "ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ", rank,
                  "), but got ", axis)
        return shape, 0, 0
    first = table[0, 1:1 + rank]
    for d in range(rank):
        shape[d] = first[d]
    shape[axis] = 0
    outer = 1
    for d in range(axis):
        outer *= first[d]
    total = 0
    for k in range(table.shape[0]):
        dims = table[k, 1:1 + rank]
        size = 1
        for d in range(rank):
            if d != axis and dims[d] != first[d]:
                mismatch(err, d, first, k, dims)
                return shape, 0, 0
            size *= dims[d]
        shape[axis] += dims[axis]
        total += size // outer if outer > 0 else 0
    return shape, outer, total


@njit(cache=True, nogil=True, inline="always")
def _contiguous(table, k, itemsize):
    """Whether part k of ``table`` is C-contiguous: each dim of more than one element strides
    over the ones after it."""
    rank = (table.shape[1] - 1) // 2
    step = itemsize
    for d in range(rank - 1, -1, -1):
        if table[k, 1 + d] != 1 and table[k, 1 + rank + d] != step:
            return False
        step *= table[k, 1 + d]
    return True


@njit(cache=True, nogil=True, inline="always")
def _part_width(table, k, outer):
    """Part k's width when viewed as [outer, width]."""
    size = 1
    for d in range((table.shape[1] - 1) // 2):
        size *= table[k, 1 + d]
    return size // outer if outer > 0 else 0


@njit(cache=True, nogil=True, inline="always")
def _copy_rows(table, k, out, col, width, r0, r1):
    """Rows [r0, r1) of part k (C-contiguous), viewed as [outer, width], into out[:, col:col + width]."""
    base, itemsize = table[k, 0], out.itemsize
    for o in range(r0, r1):
        row = carray(ptr_from_int(base + o * width * itemsize, out.dtype), (width,))
        for j in range(width):
            out[o, col + j] = row[j]


@njit(cache=True, nogil=True)
def _copy_part(table, k, out, col, width):
    """Part k of ``table``, viewed as [outer, width] in C order, into out[:, col:col + width]."""
    rank = (table.shape[1] - 1) // 2
    base = table[k, 0]
    if _contiguous(table, k, out.itemsize):
        _copy_rows(table, k, out, col, width, np.int64(0), np.int64(out.shape[0]))
        return
    index = np.zeros(rank, np.int64)  # the next element's index in the part, and its byte offset
    offset = 0
    for o in range(out.shape[0]):
        for j in range(width):
            out[o, col + j] = carray(ptr_from_int(base + offset, out.dtype), (1,))[0]
            d = rank - 1
            while d >= 0:
                index[d] += 1
                offset += table[k, 1 + rank + d]
                if index[d] < table[k, 1 + d]:
                    break
                offset -= index[d] * table[k, 1 + rank + d]
                index[d] = 0
                d -= 1


@njit(cache=True, nogil=True)
def concat_into(table, out):
    """Lays every part of ``table``, viewed as [outer, width], side by side in ``out`` ([outer,
    total]), as concat_shape measured them."""
    col = 0
    for k in range(table.shape[0]):
        width = _part_width(table, k, out.shape[0])
        _copy_part(table, k, out, col, width)
        col += width


# A concat that writes a cluster's output (the entry's deferred concat: feature columns that are
# not one layer, laid side by side) copies its rows in blocks on the op's intra-op threads: over
# 26 parts of [4096, 16] float32 one thread copied 0.95 ms (2.9 ms from memory) and two 0.46 ms
# (1.6 ms). One task per dtype, as the layer's blocks tasks (kernels/bag_layer.py says why).
BLOCK_ELEMENTS = 32768  # a block's elements: rows of the output enough that a task is worth its call
WIDE_DTYPES = ("float32", "float64")
_WIDE_ARGS = {name: types.Tuple((types.Array(types.int64, 2, "C"), types.Array(getattr(types, name), 2, "C")))
              for name in WIDE_DTYPES}
_WIDE_SYMBOLS = {name: f"tf_blade_concat_blocks_{name}" for name in WIDE_DTYPES}
_WIDE_ADDRESS = {name: cell_reader(symbol) for name, symbol in _WIDE_SYMBOLS.items()}
_read_float32, _read_float64 = args_reader(_WIDE_ARGS["float32"]), args_reader(_WIDE_ARGS["float64"])


@njit(cache=True, nogil=True, inline="always")
def _block_rows(out):
    return max(1, BLOCK_ELEMENTS // max(1, out.shape[1]))


@njit(cache=True, nogil=True, inline="always")
def _copy_block(table, out, b):
    """Rows of block ``b`` of every part (each C-contiguous) into ``out``: a block's output rows
    are written whole while they are in cache."""
    r0 = b * _block_rows(out)
    r1 = min(out.shape[0], r0 + _block_rows(out))
    col = 0
    for k in range(table.shape[0]):
        width = _part_width(table, k, out.shape[0])
        _copy_rows(table, k, out, col, width, r0, r1)
        col += width


def _concat_blocks_float32(arg, begin, end):  # one Python function per dtype: Numba's cache keys a cfunc by it
    table, out = _read_float32(arg)
    for b in range(begin, end):
        _copy_block(table, out, b)


def _concat_blocks_float64(arg, begin, end):
    table, out = _read_float64(arg)
    for b in range(begin, end):
        _copy_block(table, out, b)


# {dtype: (signature, function, symbol)}: the job of the dtype's task (kernels/bag_layer.py want_task)
WIDE_JOBS = {name: (types.void(types.voidptr, types.int64, types.int64), fn, _WIDE_SYMBOLS[name])
             for name, fn in (("float32", _concat_blocks_float32), ("float64", _concat_blocks_float64))}


def _wide_address(out):
    """The address of the blocks task of ``out``'s dtype (0: none; copy on this thread)."""


@overload(_wide_address)
def _wide_address_impl(out):
    name = str(out.dtype)
    if name not in _WIDE_ADDRESS or out.layout != "C":
        return lambda out: np.int64(0)
    read = _WIDE_ADDRESS[name]
    return lambda out: read()


@njit(cache=True, nogil=True)
def concat_into_wide(table, out, wide):
    """``concat_into``, in blocks of rows on the op's intra-op threads when ``wide`` and every
    part is C-contiguous (else, or without the dtype's task compiled, on this thread)."""
    outer = out.shape[0]
    blocks = (outer + _block_rows(out) - 1) // _block_rows(out)
    if wide and blocks > 1:
        for k in range(table.shape[0]):
            if not _contiguous(table, k, out.itemsize):
                wide = False
        if wide and run_blocks(_wide_address(out), blocks, (table, out)):
            return
    concat_into(table, out)


@njit(cache=True, nogil=True)
def concat(table, axis, example, err):
    """Returns (out as [outer, total_width], output shape vector) for the parts of ``table``;
    ``example``: an array of the parts' dtype."""
    shape, outer, total = concat_shape(table, axis, err)
    out = np.empty((outer, total), example.dtype)
    if err[0] == 0:
        concat_into(table, out)
    return out, shape


@njit(cache=True, nogil=True)
def check_same_shape(first, other, index, err):
    """Pack's check that input ``index`` has the shape of input 0, in TF's words."""
    if first.shape[0] != other.shape[0] or np.any(first != other):
        set_error(err, "Shapes of all inputs must match: values[0].shape = ", first, " != values[", index,
                  "].shape = ", other)

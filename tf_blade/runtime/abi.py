"""Numba-side helpers for the BladeFusedCall entry ABI.

Entry signature (see blade_op.cc):
    int64 entry(int64* in_ptrs, int64* in_shapes, void* call_ctx,
                void* alloc_fn, uint8* errbuf)

Everything here is pure codegen (no ctypes globals, no baked-in addresses), so
functions using these helpers can be compiled with ``cache=True``.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

ENTRY_SIG = types.int64(
    types.CPointer(types.int64),  # in_ptrs[2*n_in]
    types.CPointer(types.int64),  # in_shapes[8*n_in]
    types.voidptr,  # call_ctx
    types.voidptr,  # alloc_fn
    types.CPointer(types.uint8),  # errbuf[1024]
)
MAX_RANK = 8
ERRBUF_LEN = 1024


def _element_type(dtype):
    if isinstance(dtype, types.NumberClass):  # np.float32, numba.float32, np.bool_
        return dtype.instance_type
    if isinstance(dtype, types.DType):  # np.dtype("float32")
        return dtype.dtype
    return None


@intrinsic
def ptr_from_int(typingctx, addr, dtype):
    """int64 address -> CPointer(dtype), e.g. for numba.carray(ptr, shape)."""
    elt = _element_type(dtype)
    if elt is None or not isinstance(addr, types.Integer):
        return None
    ptr_t = types.CPointer(elt)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(ptr_t))

    return ptr_t(addr, dtype), codegen


@intrinsic
def call_alloc(typingctx, alloc_fn, ctx, index, ndim, dims_addr):
    """alloc_fn(ctx, index, ndim, dims) through the function pointer; returns
    the output's data address as int64 (0 on failure)."""
    if not (alloc_fn == types.voidptr and ctx == types.voidptr):
        return None
    if not (isinstance(index, types.Integer) and isinstance(ndim, types.Integer)):
        return None
    if not isinstance(dims_addr, (types.Integer, types.CPointer)):
        return None
    sig = types.int64(types.voidptr, types.voidptr, types.int64, types.int64, dims_addr)

    def codegen(context, builder, sig, args):
        fn_p, ctx_p, idx, nd, dims = args
        i64 = ir.IntType(64)
        i64p = i64.as_pointer()
        fnty = ir.FunctionType(ir.IntType(8).as_pointer(),
                               [ir.IntType(8).as_pointer(), i64, i64, i64p])
        fn = builder.bitcast(fn_p, fnty.as_pointer())
        if isinstance(sig.args[4], types.Integer):
            dims = builder.inttoptr(dims, i64p)
        else:
            dims = builder.bitcast(dims, i64p)
        res = builder.call(fn, [ctx_p, idx, nd, dims])
        return builder.ptrtoint(res, i64)

    return sig, codegen


@intrinsic
def copy_to(typingctx, addr, array):
    """Copies C-contiguous ``array``'s bytes to the int64 address ``addr`` (an output TF allocated
    for it). The entry wrote ``carray(...)[:] = o.ravel()``: a slice assignment links Numba's
    broadcast check, and the formatting of its message (Numba's unicode, not cached on disk)
    compiled for 1.6-2.8 s in each process that typed an entry."""
    if not (isinstance(addr, types.Integer) and isinstance(array, types.Array) and array.layout == "C"):
        return None

    def codegen(context, builder, sig, args):
        source = context.make_array(sig.args[1])(context, builder, args[1])
        byte_p = ir.IntType(8).as_pointer()
        cgutils.raw_memcpy(builder, builder.inttoptr(args[0], byte_p), builder.bitcast(source.data, byte_p),
                           builder.mul(source.nitems, source.itemsize), 1)
        return context.get_dummy_value()

    return types.none(addr, array), codegen


# Memory by address: kernels that read bytes (hashes, tstring headers) take int64 addresses and
# these loads, which type at once; Numba-level inline helpers over byte arrays re-typed every
# inlined copy (farmhash.py, strings.py).
def data_address(context, builder, array_type, array):
    """Codegen: the int64 address of ``array``'s first byte."""
    data = cgutils.create_struct_proxy(array_type)(context, builder, value=array).data
    return builder.ptrtoint(data, ir.IntType(64))


def load_unaligned(builder, addr, ty):
    """Codegen: the value of LLVM type ``ty`` at int64 address ``addr`` (unaligned: strings and
    tstring headers start anywhere)."""
    return builder.load(builder.inttoptr(addr, ty.as_pointer()), align=1)


@intrinsic
def address(typingctx, arr):
    """The int64 address of a 1-D array's first byte."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return data_address(context, builder, sig.args[0], args[0])

    return types.int64(arr), codegen


def _loader(bits):
    @intrinsic
    def load(typingctx, addr):
        """The little-endian unsigned integer of ``bits`` bits at ``addr``, as a uint64."""
        if not isinstance(addr, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            value = load_unaligned(builder, args[0], ir.IntType(bits))
            return value if bits == 64 else builder.zext(value, ir.IntType(64))

        return types.uint64(addr), codegen
    return load


load8, load32, load64 = _loader(8), _loader(32), _loader(64)


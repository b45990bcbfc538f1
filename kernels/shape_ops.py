"""Shape arithmetic kernels: Shape, Reshape's -1 resolution, ExpandDims, Transpose's view."""
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .errors import INT64_MAX, joined, set_error


@intrinsic(prefer_literal=True)
def transposed(typingctx, array, perm):
    """``array`` viewed with its axes in the order ``perm`` (a tuple of int literals, checked when
    typed). Numba's own ``transpose`` checks the axes at run time, and the formatting of its
    message (Numba's unicode str and concatenation, not cached on disk) compiled for 1.6-2.8 s in
    each process that typed one: the first generated part with a transpose paid for it."""
    if not (isinstance(array, types.Array) and isinstance(perm, types.BaseTuple)
            and all(isinstance(t, types.IntegerLiteral) for t in perm)):
        raise TypingError(f"transposed takes an array and a tuple of int literals, not {array}, {perm}")
    axes = [t.literal_value for t in perm]
    if sorted(axes) != list(range(array.ndim)):
        raise TypingError(f"{tuple(axes)} is not a permutation of {array.ndim} axes")

    def codegen(context, builder, sig, args):
        source = context.make_array(sig.args[0])(context, builder, args[0])
        shape, strides = cgutils.unpack_tuple(builder, source.shape), cgutils.unpack_tuple(builder, source.strides)
        view = context.make_array(sig.return_type)(context, builder)
        context.populate_array(view, data=source.data, shape=cgutils.pack_array(builder, [shape[a] for a in axes]),
                               strides=cgutils.pack_array(builder, [strides[a] for a in axes]),
                               itemsize=source.itemsize, meminfo=source.meminfo, parent=source.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, view._getvalue())
    return array.copy(layout="A")(array, perm), codegen


@njit(cache=True, nogil=True)
def shape_of(x, rank, out_dtype_example, err):
    """Shape vector of ``x``; ``rank`` is the true rank (x is (1,) for scalars). As TF's, an
    int32 one refuses a dim of 2**31 - 1 or more (an empty tensor can have one)."""
    out = np.empty(rank, out_dtype_example.dtype)
    limit = np.iinfo(out_dtype_example.dtype).max
    for i in range(rank):
        if x.shape[i] >= limit:
            set_error(err, "Shape output type is 32-bit  but dim ", i, " is ", x.shape[i])
        out[i] = x.shape[i]
    return out


@njit(cache=True, nogil=True)
def size_of(x, out_dtype_example, err):
    """Size of ``x`` as a 1-element vector; an int32 one refuses 2**31 - 1 elements or more, as TF."""
    if x.size >= np.iinfo(out_dtype_example.dtype).max:
        set_error(err, "Number of elements was larger than representable by 32-bit output type")
    return np.full(1, x.size, out_dtype_example.dtype)


@njit(cache=True, nogil=True)
def resolve_reshape(in_dims, shape, err):
    """TF Reshape's output shape (at most one -1, inferred), or an error.

    ``in_dims`` is the input's shape tuple, or just its size: the answer is the same unless both
    the input and the requested shape contain zero-sized dims, where TF infers -1 from the
    non-zero dims only ((0, 6) reshaped to [0, -1] is (0, 6); from the size alone, (0, 1)).
    """
    dims = np.asarray(in_dims).ravel()
    size = 1
    for i in range(dims.shape[0]):
        size *= np.int64(dims[i])
    out = np.empty(shape.shape[0], np.int64)
    running = 1     # TF's overflow check: the shape built so far, -1 counted as 1
    product = 1     # of the non-zero sizes
    product_overflows = False
    has_zero = False
    unknown = -1
    for i in range(shape.shape[0]):
        d = np.int64(shape[i])
        out[i] = d
        if d == -1:
            if unknown >= 0:
                set_error(err, "Only one input size may be -1, not both ", unknown, " and ", i)
                return out
            unknown = i
            out[i] = 1
        elif d < 0:
            set_error(err, "Size ", i, " must be non-negative, not ", d)
            return out
        elif d == 0:
            has_zero = True
            running = 0
        else:
            if running > INT64_MAX // d:
                set_error(err, "Shape [", joined(shape), "] has too many elements")
                return out
            running *= d
            product_overflows = product_overflows or product > INT64_MAX // d
            product *= d
    if unknown >= 0:
        if product_overflows:  # TF divides by the wrapped product (SIGFPE when it wraps to 0)
            set_error(err, "Shape [", joined(shape), "] has too many elements")
            return out
        num = 1
        input_has_zero = False
        for i in range(dims.shape[0]):
            v = np.int64(dims[i])
            if v > 0 or not has_zero:
                num *= v
            else:
                input_has_zero = True
        missing = num // product
        if not input_has_zero and product * missing != num:
            set_error(err, "Input to reshape is a tensor with ", num,
                      " values, but the requested shape requires a multiple of ", product)
            return out
        out[unknown] = missing
    total = 1
    for i in range(out.shape[0]):
        total *= out[i]
    if total != size:
        set_error(err, "Input to reshape is a tensor with ", size, " values, but the requested shape has ", total)
    return out


@njit(cache=True, nogil=True)
def expanded_shape(x, rank, axis, err):
    """ExpandDims: the input's dims with a 1 inserted at ``axis`` (negative counts from the end)."""
    out = np.ones(rank + 1, np.int64)
    if axis < -rank - 1 or axis > rank:
        set_error(err, "Tried to expand dim index ", axis, " for tensor with ", rank, " dimensions.")
        return out
    ax = axis + rank + 1 if axis < 0 else axis
    k = 0
    for d in range(rank + 1):
        if d != ax:
            out[d] = x.shape[k]
            k += 1
    return out


@njit(cache=True, nogil=True)
def squeezed_shape(x, axes, err):
    """Squeeze of the listed (normalized) axes: each must have size 1, as TF checks."""
    out = np.empty(x.ndim - axes.shape[0], np.int64)
    k = 0
    for d in range(x.ndim):
        listed = False
        for a in axes:
            listed = listed or a == d
        if listed:
            if x.shape[d] != 1:
                set_error(err, "Can not squeeze dim[", d, "], expected a dimension of 1, got ", x.shape[d])
                return out
        else:
            out[k] = x.shape[d]
            k += 1
    return out


@njit(cache=True, nogil=True)
def check_unpack(x, axis, num, err):
    """TF Unpack: the unpacked axis must hold exactly ``num`` entries (``x`` has rank >= 1)."""
    if x.shape[axis] != num:
        set_error(err, "Input shape axis ", axis, " must equal ", num, ", got shape ", x.shape)

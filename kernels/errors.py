"""Error reporting from nopython code: a message is written into a caller-owned uint8 buffer.

Numba cannot carry an exception's message across a cfunc boundary, so kernels write the text
TensorFlow would have raised into ``err`` and return; the bridge turns it into
InvalidArgumentError, or ResourceExhaustedError when it starts with ``OOM_PREFIX``, as TF's own
allocation failures do.
"""
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.core.errors import TypingError
from numba.core.typing import signature
from numba.extending import intrinsic, models, register_model
from llvmlite import ir

ERR_BYTES = 1024
OOM_PREFIX = "OOM when allocating"  # the start of every kernel's allocation failure (blade_op.cc too)
INT64_MAX = 9223372036854775807  # the bound of TF's size checks (element counts, Range's length)


def new_error_buffer():
    return np.zeros(ERR_BYTES, np.uint8)


class Summary(types.Type):
    """An integer vector as TF's Assert prints its data: its first ``limit`` values (all when
    ``limit`` < 0), ``separator`` between them, then "..." if some were left out. Made by
    kernels/assertion.summarize (space separated) and ``joined``; a part of set_error's message,
    so that an Assert's code makes no strings (Numba's unicode concatenation and str() were a
    third of each generated part's code)."""

    def __init__(self, array, separator=" "):
        self.array, self.separator = array, separator
        super().__init__(name=f"Summary({array}, {separator!r})")


@register_model(Summary)
class _SummaryModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("values", fe_type.array), ("limit", types.int64)])


@intrinsic
def joined(typingctx, values):
    """A part of set_error's message: every element of an integer vector, ", " between them (as TF
    joins a shape's sizes in some messages: "Shape [3, 0] has ...", where a shape part is "[3,0]")."""
    if not (isinstance(values, types.Array) and values.ndim == 1 and isinstance(values.dtype, types.Integer)):
        raise TypingError(f"joined takes an integer vector, not {values}")

    def codegen(context, builder, sig, args):
        return summary_value(context, builder, sig.return_type, args[0], context.get_constant(types.int64, -1))
    return Summary(values, ", ")(values), codegen


class Text(types.Type):
    """Message text made before the kernel runs, as message_bytes' uint8 vector (a 0 ends it
    early): a part of set_error's message that is a parameter of a part's code, not a literal in
    it, so that what it says (a node's name, an Assert's message) does not make another template."""

    def __init__(self, array):
        self.array = array
        super().__init__(name=f"Text({array})")


@register_model(Text)
class _TextModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("bytes", fe_type.array)])


@intrinsic
def text(typingctx, data):
    """A part of set_error's message: the bytes of ``data`` (message_bytes'), as text."""
    if not (isinstance(data, types.Array) and data.ndim == 1 and data.dtype == types.uint8):
        raise TypingError(f"text takes a uint8 vector, not {data}")

    def codegen(context, builder, sig, args):
        value = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        value.bytes = args[0]
        return impl_ret_borrowed(context, builder, sig.return_type, value._getvalue())
    return Text(data)(data), codegen


def summary_value(context, builder, summary_type, values, limit):
    """The codegen of a Summary over ``values`` (borrowed) showing ``limit`` (an int64) of them."""
    summary = cgutils.create_struct_proxy(summary_type)(context, builder)
    summary.values, summary.limit = values, limit
    return impl_ret_borrowed(context, builder, summary_type, summary._getvalue())


# Parts, not one concatenated string: the literals and integers go to one snprintf (its format made
# when the call is compiled) and an array's dims to a loop of them, where Numba's unicode
# concatenation and str() were most of a cold start's compile of the feature layer's plan task
# (3.89 s; 2.05 s with this).
@intrinsic(prefer_literal=True)
def set_error(typingctx, err, *parts):
    """Writes the message ``parts`` make, one after another, into ``err`` (nopython code only),
    unless it already holds one: later errors are usually the first one's consequences. A part is
    a string (a literal, or text made at run time), a Text, an integer, a shape (an int array or tuple,
    written as TF writes one: "[2,3]") or a Summary. Bytes past 127 are written as "?"."""
    parts = parts[0].types if len(parts) == 1 and isinstance(parts[0], types.StarArgTuple) else parts
    if not (isinstance(err, types.Array) and err.dtype == types.uint8 and err.ndim == 1 and err.layout == "C"):
        raise TypingError(f"set_error writes into a C-contiguous uint8 vector, not {err}")
    for part in parts:
        _check_part(part)

    def codegen(context, builder, sig, args):
        buffer = context.make_array(sig.args[0])(context, builder, args[0])
        values = cgutils.unpack_tuple(builder, args[1]) if parts else []
        writer = _Writer(context, builder, sig.args[0], buffer)
        with builder.if_then(builder.icmp_unsigned("==", builder.load(buffer.data), _BYTE(0))):
            for part, value in zip(parts, values):
                writer.add(part, value)
            writer.finish()
        return context.get_dummy_value()
    return signature(types.void, err, types.StarArgTuple.from_types(parts)), codegen


def _check_part(part):
    if isinstance(part, (types.StringLiteral, types.UnicodeType)):
        return
    if isinstance(part, types.Integer):  # not a bool: Numba's Boolean is no Integer
        return
    if isinstance(part, types.Array) and part.ndim == 1 and isinstance(part.dtype, types.Integer):
        return
    if isinstance(part, (Summary, Text)):
        return
    if isinstance(part, types.BaseTuple) and all(isinstance(t, types.Integer) for t in part):
        return
    raise TypingError(f"set_error writes strings, integers and shapes, not {part}")


_BYTE, _INT, _LONG = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_SNPRINTF = ir.FunctionType(_INT, [_BYTE.as_pointer(), _LONG, _BYTE.as_pointer()], var_arg=True)


class _Writer:
    """Emits the writes of one message: runs of literals and integers as one snprintf each."""

    def __init__(self, context, builder, err_type, buffer):
        self.context, self.builder, self.err_type, self.buffer = context, builder, err_type, buffer
        self.at = cgutils.alloca_once_value(builder, _LONG(0))  # bytes written; at most size - 1
        self.format, self.values = "", []

    def add(self, part, value):
        context, builder = self.context, self.builder
        if isinstance(part, types.StringLiteral):
            self.format += part.literal_value.encode("ascii", "replace").decode().replace("%", "%%")
        elif isinstance(part, types.Integer):
            as_type = types.int64 if part.signed else types.uint64
            if isinstance(part, types.Literal):
                value = context.get_constant(as_type, part.literal_value)
            else:
                value = context.cast(builder, value, part, as_type)
            self.format += "%lld" if part.signed else "%llu"
            self.values.append(value)
        elif isinstance(part, types.UnicodeType):
            self.flush()
            at = context.compile_internal(builder, _put_text.py_func,
                                          signature(types.int64, self.err_type, types.int64, part),
                                          [self.buffer._getvalue(), builder.load(self.at), value])
            builder.store(at, self.at)
        elif isinstance(part, Text):
            self.flush()
            data = cgutils.create_struct_proxy(part)(context, builder, value=value).bytes
            at = context.compile_internal(builder, _put_bytes.py_func,
                                          signature(types.int64, self.err_type, types.int64, part.array),
                                          [self.buffer._getvalue(), builder.load(self.at), data])
            builder.store(at, self.at)
        elif isinstance(part, Summary):
            self.flush()
            summary = cgutils.create_struct_proxy(part)(context, builder, value=value)
            array = context.make_array(part.array)(context, builder, summary.values)
            total, limit = array.nitems, summary.limit
            shown = builder.select(builder.or_(builder.icmp_signed("<", limit, _LONG(0)),
                                               builder.icmp_signed(">", limit, total)), total, limit)
            self.items(part.array, array, shown, part.separator)
            with builder.if_then(builder.icmp_signed("<", shown, total)):
                self.print("...", [])
        else:  # a shape: "[", its dims joined by ",", "]"
            self.format += "["
            if isinstance(part, types.BaseTuple):
                for i, t in enumerate(part):
                    self.add(types.int64, context.cast(builder, builder.extract_value(value, i), t, types.int64))
                    self.format += "," if i < len(part) - 1 else ""
            else:
                self.flush()
                self.items(part, context.make_array(part)(context, builder, value), None, ",")
            self.format += "]"

    def items(self, array_type, array, n, separator):
        """The first ``n`` (all when None) items of a 1-D integer array, ``separator`` between them."""
        context, builder = self.context, self.builder
        as_type, format = (types.int64, "%lld") if array_type.dtype.signed else (types.uint64, "%llu")
        with cgutils.for_range(builder, array.nitems if n is None else n) as loop:
            item = builder.load(cgutils.get_item_pointer(context, builder, array_type, array, [loop.index]))
            with builder.if_then(builder.icmp_signed(">", loop.index, _LONG(0))):
                self.print(separator, [])
            self.print(format, [context.cast(builder, item, array_type.dtype, as_type)])

    def flush(self):
        if self.format:
            self.print(self.format, self.values)
        self.format, self.values = "", []

    def print(self, format, values):
        """snprintf(format, *values) at the end of what is written, within the buffer."""
        builder = self.builder
        at, size = builder.load(self.at), self.buffer.nitems
        fn = cgutils.get_or_insert_function(builder.module, _SNPRINTF, "snprintf")
        text = self.context.insert_const_string(builder.module, format)
        wrote = builder.call(fn, [builder.gep(self.buffer.data, [at]), builder.sub(size, at), text] + values)
        end = builder.add(at, builder.sext(wrote, _LONG))
        last = builder.sub(size, _LONG(1))
        builder.store(builder.select(builder.icmp_signed("<", end, last), end, last), self.at)

    def finish(self):
        self.flush()
        builder = self.builder
        builder.store(_BYTE(0), builder.gep(self.buffer.data, [builder.load(self.at)]))


@njit(cache=True, nogil=True)
def _put_text(err, at, text):
    """Text made at run time (not a literal), from ``at``; returns where it ends."""
    for k in range(len(text)):
        if at >= err.shape[0] - 1:
            break
        c = ord(text[k])
        err[at] = c if c < 128 else 63
        at += 1
    return at


@njit(cache=True, nogil=True)
def _put_bytes(err, at, data):
    """A Text's bytes (ASCII already: message_bytes) from ``at``, up to a 0; returns where they end."""
    for k in range(len(data)):
        if at >= err.shape[0] - 1 or data[k] == 0:
            break
        err[at] = data[k]
        at += 1
    return at


def message_bytes(text: str) -> np.ndarray:
    """``text`` as the bytes ``add_context`` appends (a generated module's constant: typing no
    strings keeps a model's entry quick to compile), non-ASCII as "?" as set_error writes it."""
    return np.frombuffer(text.encode("ascii", "replace"), np.uint8)


def context_suffix(node: str) -> np.ndarray:
    """TF's own "[[{{node X}}]]" suffix for ``node``, as message_bytes."""
    return message_bytes("\n\t [[{{node " + node + "}}]]")


@njit(cache=True, nogil=True)
def add_context(err, suffix):
    """Appends ``suffix`` (context_suffix's bytes; a 0 ends it early) so a message names the
    original op."""
    n = 0
    while n < err.shape[0] - 1 and err[n] != 0:
        n += 1
    err[_put_bytes(err, n, suffix)] = 0


@njit(cache=True, nogil=True)
def error_rows(n, err):
    """An error buffer like ``err`` for each of ``n`` parts run as a group (parallel.group_caller)."""
    return np.zeros((n, err.shape[0]), np.uint8)


@njit(cache=True, nogil=True)
def first_failed(errs, err):
    """The first of a group's parts (in graph order, so the message does not depend on timing)
    whose error row holds an error, that error copied into ``err``; -1 when none failed."""
    for i in range(errs.shape[0]):
        if errs[i, 0] != 0:
            for b in range(err.shape[0]):  # a slice assignment would compile Numba's message
                err[b] = errs[i, b]
            return i
    return -1


def error_text(err):
    return bytes(err).split(b"\0", 1)[0].decode("ascii", "replace")


@njit(cache=True, nogil=True)
def multi_index(shape, flat):
    """The position of element ``flat`` of an array of ``shape``, which messages name as a shape
    ("indices[1,0] = ...")."""
    index = np.zeros(len(shape), np.int64)
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] > 0:
            index[d] = flat % shape[d]
            flat //= shape[d]
    return index


@njit(cache=True, nogil=True)
def out_of_memory(err, dims):
    """TF's message (a ResourceExhaustedError, OOM_PREFIX) for an output of ``dims`` that cannot
    be allocated."""
    set_error(err, OOM_PREFIX, " tensor with shape", dims)


@njit(cache=True, nogil=True)
def multiply_sizes(a, b, err):
    """``a * b`` for sizes a, b >= 0, as TF's shapes multiply them (MultiplyWithoutOverflow): -1,
    with TF's message in ``err``, when the product passes int64."""
    if b != 0 and a > INT64_MAX // b:
        set_error(err, "Encountered overflow when multiplying ", a, " with ", b, ", result: ", _overflow_result(a, b))
        return np.int64(-1)
    return np.int64(a * b)


@njit(cache=True, nogil=True)
def _overflow_result(a, b):
    """What TF's MultiplyWithoutOverflow returns for non-negative ``a * b`` past int64: the product
    read as int64 while it fits 64 unsigned bits, else -1 (the "result" of its overflow message)."""
    product = np.uint64(a) * np.uint64(b)
    if product // np.uint64(a) != np.uint64(b):
        return np.int64(-1)
    return np.int64(product)


@njit(cache=True, nogil=True)
def int_text(v):
    """str() of an integer. Numba's own str() fails (MemoryError) on a type's most negative value."""
    if v >= 0:
        return str(v)
    x = np.int64(v)
    if x == -9223372036854775807 - 1:
        return "-9223372036854775808"
    return "-" + str(-x)

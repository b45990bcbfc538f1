"""Strings in kernels are TF tstrings: how they are read, and how tf_blade makes its own.

A string tensor travels as ``(ids, offsets, data)``: ``ids`` index the tensor's strings and
``string_at(offsets, data, i)`` returns ``(buffer, start, length)``, the bytes being
``buffer[start:start + length]``. In generated code ``offsets`` is always a buffer of tstrings
(uint8, 24 bytes each) and ``data``, which string_at does not read, is empty or, for strings that
view another buffer's bytes (split tokens, VIEW tstrings), that buffer, held beside them:

- string inputs of the native op are TF's own tensor buffer, read in place (no copy per call);
- constants, AsString results and the numpy_function bridge's inputs are laid out the same way by
  ``tstrings_from_bytes`` and, inside kernels, ``new_tstrings``.

A tstring (tensorflow/tsl/platform/ctstring_internal.h, little-endian hosts) keeps its type in the
low 2 bits of its first byte and its size shifted left by 2: SMALL (size in byte 0, up to 22 bytes
inline from byte 1), LARGE (size_t size, cap, char* ptr), OFFSET (uint32 size, offset from the
tstring itself, count) and VIEW (size_t size, const char* ptr, owner).

``string_at`` also reads a plain pool (int64 ``offsets``, string i is
``data[offsets[i]:offsets[i + 1]]``), the simplest form for kernel unit tests.
"""
import struct

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from ..runtime.abi import data_address, load_unaligned, ptr_from_int
from .errors import set_error

TSTRING_BYTES = 24
SMALL_CAPACITY = 22
_SMALL, _LARGE, _OFFSET = 0, 1, 2


def tstrings_from_bytes(values) -> np.ndarray:
    """The tstrings of ``values`` (a sequence of bytes) in one position-independent buffer: SMALL
    where a string fits, else OFFSET with its bytes after all the headers. The numpy bridge lays
    out every string input this way on every call, so the short strings go in one NumPy copy."""
    n = len(values)
    lens = np.fromiter(map(len, values), np.int64, n)
    longs = np.flatnonzero(lens > SMALL_CAPACITY)
    tail = n * TSTRING_BYTES
    buf = np.zeros(tail + int(lens[longs].sum()), np.uint8)
    if buf.shape[0] - tail >= 1 << 32:
        raise ValueError("tf_blade: more than 4 GiB of long strings in one tensor")
    headers = buf[:tail].reshape(n, TSTRING_BYTES)
    short = values if not len(longs) else [b"" if len(v) > SMALL_CAPACITY else v for v in values]
    headers[:, 0] = lens << 2 | _SMALL  # the long ones are rewritten below
    fixed = np.array(short, dtype=f"S{SMALL_CAPACITY}")  # zero-padded: the padding is TF's too
    headers[:, 1:1 + SMALL_CAPACITY] = fixed.view(np.uint8).reshape(n, SMALL_CAPACITY)
    for i in longs:  # OFFSET: uint32 size << 2 | type, offset from this tstring, count
        v = values[i]
        headers[i, :12] = np.frombuffer(struct.pack("<III", len(v) << 2 | _OFFSET, tail - i * TSTRING_BYTES, 1), np.uint8)
        buf[tail:tail + len(v)] = np.frombuffer(v, np.uint8)
        tail += len(v)
    return buf


def string_at(offsets, data, i):
    """(buffer, start, length) of string ``i``; see the module docstring. Numba code only."""
    raise NotImplementedError("string_at is compiled into kernels (numba.extending.overload)")


@intrinsic
def _tstring_span(typingctx, raw, i):
    """(address, size) of tstring ``i`` of ``raw`` (uint8, TSTRING_BYTES a string). SMALL (most
    feature strings) is the branch expected; for the other kinds every field one could use is read
    (all lie in the tstring's 24 bytes) and the kind picks. Written in LLVM IR: as Numba code,
    inlined into every loop over strings, its decoding took ~0.5 s of hash_rows' cold compile.
    An OFFSET string's bytes lie at the tstring's own address plus the offset: maybe past this
    buffer."""
    if not (isinstance(raw, types.Array) and raw.ndim == 1 and raw.dtype == types.uint8
            and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i64, i32, i8 = ir.IntType(64), ir.IntType(32), ir.IntType(8)
        data = data_address(context, builder, sig.args[0], args[0])
        index = context.cast(builder, args[1], sig.args[1], types.int64)
        at = builder.add(data, builder.mul(index, ir.Constant(i64, TSTRING_BYTES)))

        def field(offset, ty):  # the ``ty`` at the tstring's byte ``offset``
            return load_unaligned(builder, builder.add(at, ir.Constant(i64, offset)), ty)
        head = field(0, i8)
        kind = builder.and_(head, ir.Constant(i8, 3))
        two = ir.Constant(i64, 2)
        with builder.if_else(builder.icmp_unsigned("==", kind, ir.Constant(i8, _SMALL)), likely=True) as (small, other):
            with small:  # size in byte 0, the bytes inline from byte 1
                small_size, small_ptr = builder.lshr(builder.zext(head, i64), two), builder.add(at, ir.Constant(i64, 1))
                small_block = builder.basic_block
            with other:  # OFFSET: uint32 size, offset; LARGE: size_t size, cap, ptr; VIEW: size, ptr
                is_offset = builder.icmp_unsigned("==", kind, ir.Constant(i8, _OFFSET))
                other_size = builder.select(is_offset, builder.lshr(builder.zext(field(0, i32), i64), two),
                                            builder.lshr(field(0, i64), two))
                is_large = builder.icmp_unsigned("==", kind, ir.Constant(i8, _LARGE))
                other_ptr = builder.select(is_offset, builder.add(at, builder.zext(field(4, i32), i64)),
                                           builder.select(is_large, field(16, i64), field(8, i64)))
                other_block = builder.basic_block
        size, ptr = builder.phi(i64), builder.phi(i64)
        for phi, if_small, if_other in ((size, small_size, other_size), (ptr, small_ptr, other_ptr)):
            phi.add_incoming(if_small, small_block)
            phi.add_incoming(if_other, other_block)
        return context.make_tuple(builder, sig.return_type, [ptr, size])
    return types.UniTuple(types.int64, 2)(raw, i), codegen


@njit(cache=True, nogil=True, inline="always")  # one call per string otherwise: 8% of a hash column
def _tstring_at(raw, i):
    # Every kind comes back as a pointer view (no owner): returning ``raw`` itself for SMALL made
    # Numba take and drop a reference on it per string, two atomics that were 3/4 of a hash column.
    ptr, size = _tstring_span(raw, i)
    return carray(ptr_from_int(ptr, np.uint8), (size,)), 0, size


@overload(string_at, inline="always")
def _string_at_impl(offsets, data, i):
    if not isinstance(offsets, types.Array) or offsets.ndim != 1:
        raise TypingError("string_at: offsets must be a 1-D array")
    if offsets.dtype == types.uint8:
        return lambda offsets, data, i: _tstring_at(offsets, i)

    def pool(offsets, data, i):
        start = offsets[i]
        return data, start, offsets[i + 1] - start
    return pool


def string_length(offsets, data, i):
    """The length of string ``i`` (string_at's third value, without its pointer). Numba code only."""
    raise NotImplementedError("string_length is compiled into kernels (numba.extending.overload)")


@overload(string_length, inline="always")
def _string_length_impl(offsets, data, i):
    if not isinstance(offsets, types.Array) or offsets.ndim != 1:
        raise TypingError("string_length: offsets must be a 1-D array")
    if offsets.dtype == types.uint8:
        return lambda offsets, data, i: _tstring_span(offsets, i)[1]
    return lambda offsets, data, i: offsets[i + 1] - offsets[i]


@njit(cache=True, nogil=True)
def string_at_outlined(offsets, data, i):
    """string_at, not inlined: a second inlined copy in one function trips Numba's SSA checks."""
    return string_at(offsets, data, i)


_VIEW = np.uint64(3)  # a tstring's type in its low 2 bits: VIEW is (size << 2 | 3, char* ptr, 0)


@njit(cache=True, nogil=True, inline="always")
def put_view(words, t, buf, start, stop):
    """String t of ``words`` (uint64, 3 a tstring): a VIEW tstring of buf[start:stop]. Its bytes
    stay ``buf``'s: whoever holds the views must keep buf's owner alive (Emitter.made_strings)."""
    words[3 * t] = (np.uint64(stop - start) << np.uint64(2)) | _VIEW
    words[3 * t + 1] = np.uint64(np.int64(buf.ctypes.data) + start)
    words[3 * t + 2] = np.uint64(0)


_MAX_OFFSET_SIZE = (1 << 30) - 1  # an OFFSET tstring keeps its size in 30 bits


@njit(cache=True, nogil=True)
def new_tstrings(lengths, err):
    """A buffer for strings of these ``lengths``, laid out as ``tstrings_from_bytes`` does (SMALL
    when a string fits, else OFFSET with its bytes after all the headers), and ``where``: string
    i's bytes go to ``buffer[where[i]:where[i] + lengths[i]]``. Kernels that make strings (AsString,
    string crosses) fill it in place; on error (too big) both come back empty."""
    n = lengths.shape[0]
    tail = n * TSTRING_BYTES
    longs = 0
    for i in range(n):
        if lengths[i] > SMALL_CAPACITY:
            longs += lengths[i]
            if lengths[i] > _MAX_OFFSET_SIZE:
                set_error(err, "tf_blade: a string of ", lengths[i], " bytes does not fit a tstring")
    if longs >= 1 << 32:
        set_error(err, "tf_blade: more than 4 GiB of long strings in one tensor")
    if err[0] != 0:
        return np.zeros(0, np.uint8), np.zeros(0, np.int64)
    buf = np.zeros(tail + longs, np.uint8)
    where = np.empty(n, np.int64)
    for i in range(n):
        at = i * TSTRING_BYTES
        size = lengths[i]
        if size <= SMALL_CAPACITY:
            buf[at] = np.uint8(size << 2)  # type SMALL is 0
            where[i] = at + 1
            continue
        _put_u32(buf, at, (size << 2) | _OFFSET)
        _put_u32(buf, at + 4, tail - at)  # OFFSET counts from the tstring itself
        _put_u32(buf, at + 8, 1)
        where[i] = tail
        tail += size
    return buf, where


@njit(cache=True, nogil=True, inline="always")
def copy_run(dst, at, src, first, n):
    """dst[at:at + n] = src[first:first + n] (1-D arrays, in bounds) as a loop: a slice assignment
    between arrays links Numba's shape-mismatch message, whose unicode formatting compiled for
    ~2.2 s in each process that typed one (runtime/abi.copy_to). Unsigned indices: Numba wraps a
    negative signed one, and that check kept LLVM from vectorising the loop (BroadcastTo's rows of
    16 floats: 46 -> 13 us at [4096, 16]). Indices, not a view of ``src`` a run: a view costs
    reference counts."""
    for i in range(n):
        dst[np.uint64(at + i)] = src[np.uint64(first + i)]


@njit(cache=True, nogil=True, inline="always")
def put_into(dst, at, src):
    """dst[at:at + len(src)] = src (1-D arrays), by copy_run."""
    copy_run(dst, at, src, 0, src.shape[0])


@njit(cache=True, nogil=True, inline="always")
def _put_u32(buf, at, v):
    for b in range(4):
        buf[at + b] = np.uint8((v >> (8 * b)) & 0xFF)

"""Error reporting from nopython code: a message is written into a caller-owned uint8 buffer.

Numba cannot carry an exception's message across a cfunc boundary, so kernels write the text
TensorFlow would have raised into ``err`` and return; the bridge turns it into
InvalidArgumentError, or ResourceExhaustedError when it starts with ``OOM_PREFIX``, as TF's own
allocation failures do.
"""
import numpy as np
from numba import njit

ERR_BYTES = 1024
OOM_PREFIX = "OOM when allocating"  # the start of every kernel's allocation failure (blade_op.cc too)
INT64_MAX = 9223372036854775807  # the bound of TF's size checks (element counts, Range's length)


def new_error_buffer():
    return np.zeros(ERR_BYTES, np.uint8)


# Typed, not left to each call: a literal message is a Numba type of its own, and each compiled
# set_error again (five in criteo-fc's layer alone).
@njit("void(uint8[::1], unicode_type)", cache=True, nogil=True)
def set_error(err, msg):
    if err[0] != 0:  # keep the first error: later ones are usually its consequences
        return
    n = min(len(msg), err.shape[0] - 1)
    for k in range(n):
        c = ord(msg[k])
        err[k] = c if c < 128 else 63
    err[n] = 0


def context_suffix(node: str) -> np.ndarray:
    """TF's own "[[{{node X}}]]" suffix for ``node``, as the bytes ``add_context`` appends (a
    generated module's constant: typing no strings keeps a model's entry quick to compile)."""
    return np.frombuffer(("\n\t [[{{node " + node + "}}]]").encode("ascii", "replace"), np.uint8)


@njit(cache=True, nogil=True)
def add_context(err, suffix):
    """Appends ``suffix`` (context_suffix's bytes; a 0 ends it early) so a message names the
    original op."""
    n = 0
    while n < err.shape[0] - 1 and err[n] != 0:
        n += 1
    for k in range(len(suffix)):
        if n >= err.shape[0] - 1 or suffix[k] == 0:
            break
        err[n] = suffix[k]
        n += 1
    err[n] = 0


def error_text(err):
    return bytes(err).split(b"\0", 1)[0].decode("ascii", "replace")


@njit(cache=True, nogil=True)
def out_of_memory(err, dims):
    """TF's message (a ResourceExhaustedError, OOM_PREFIX) for an output of ``dims`` that cannot
    be allocated."""
    set_error(err, OOM_PREFIX + " tensor with shape" + dims_text(dims))


@njit(cache=True, nogil=True)
def dims_text(dims):
    """A shape (array or tuple of ints) the way TensorFlow prints one in messages: "[2,3]"."""
    s = "["
    for i in range(len(dims)):
        if i > 0:
            s += ","
        s += int_text(dims[i])
    return s + "]"


@njit(cache=True, nogil=True)
def int_text(v):
    """str() of an integer. Numba's own str() fails (MemoryError) on a type's most negative value."""
    if v >= 0:
        return str(v)
    x = np.int64(v)
    if x == -9223372036854775807 - 1:
        return "-9223372036854775808"
    return "-" + str(-x)

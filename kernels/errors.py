"""Error reporting from nopython code: a message is written into a caller-owned uint8 buffer.

Numba cannot carry an exception's message across a cfunc boundary, so kernels write the text
TensorFlow would have raised into ``err`` and return; the bridge turns it into
InvalidArgumentError.
"""
import numpy as np
from numba import njit

ERR_BYTES = 1024


def new_error_buffer():
    return np.zeros(ERR_BYTES, np.uint8)


@njit(cache=True, nogil=True)
def set_error(err, msg):
    if err[0] != 0:  # keep the first error: later ones are usually its consequences
        return
    n = min(len(msg), err.shape[0] - 1)
    for k in range(n):
        c = ord(msg[k])
        err[k] = c if c < 128 else 63
    err[n] = 0


@njit(cache=True, nogil=True)
def add_context(err, node):
    """Appends TF's own "[[{{node X}}]]" suffix so a message names the original op."""
    n = 0
    while n < err.shape[0] - 1 and err[n] != 0:
        n += 1
    suffix = "\n\t [[{{node " + node + "}}]]"
    for k in range(len(suffix)):
        if n >= err.shape[0] - 1:
            break
        c = ord(suffix[k])
        err[n] = c if c < 128 else 63
        n += 1
    err[n] = 0


def error_text(err):
    return bytes(err).split(b"\0", 1)[0].decode("ascii", "replace")

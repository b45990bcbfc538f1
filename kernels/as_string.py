"""AsString on integers and booleans, formatted as TF's printf format does (``%[fill][width]d``).

TF builds the format from its attributes: ``fill`` goes in as a printf flag, with or without a
width. For integers "-" pads on the right, "0" with zeros after the sign, "+" always writes a
sign, " " a space where "+" would be, "#" changes nothing; TF refuses any other fill. Booleans
print "true" / "false", unpadded.
"""
import numpy as np
from numba import njit

from .farmhash import _MAX_INT_DIGITS, _format_int
from .strings import new_tstrings, put_into

NO_FLAG, LEFT, ZEROS, PLUS, SPACE = 0, 1, 2, 3, 4
FLAGS = {"": NO_FLAG, "#": NO_FLAG, "-": LEFT, "0": ZEROS, "+": PLUS, " ": SPACE}


@njit(cache=True, nogil=True)
def as_string_ints(values, width, flag, err):
    """The tstrings of ``values`` (any integer dtype, flat); ``width`` -1 means none."""
    n = values.shape[0]
    digits = np.empty((n, _MAX_INT_DIGITS), np.uint8)  # each value's text, right-aligned
    starts = np.empty(n, np.int64)
    lengths = np.empty(n, np.int64)
    for i in range(n):
        v = np.int64(values[i])
        start = _format_int(v, digits[i])
        if v >= 0 and (flag == PLUS or flag == SPACE):
            start -= 1
            digits[i, start] = 43 if flag == PLUS else 32  # '+' / ' '
        starts[i] = start
        lengths[i] = max(_MAX_INT_DIGITS - start, width)
    buf, where = new_tstrings(lengths, err)
    if err[0] != 0:
        return buf
    for i in range(n):
        text = digits[i, starts[i]:]
        at = where[i]
        pad = lengths[i] - text.shape[0]
        if flag == LEFT:  # text, then spaces
            put_into(buf, at, text)
            buf[at + text.shape[0]:at + lengths[i]] = 32
        elif flag == ZEROS and pad > 0:  # sign, zeros, digits
            sign = 1 if text[0] == 45 or text[0] == 43 or text[0] == 32 else 0
            put_into(buf, at, text[:sign])
            buf[at + sign:at + sign + pad] = 48
            put_into(buf, at + sign + pad, text[sign:])
        else:  # spaces, then text
            buf[at:at + pad] = 32
            put_into(buf, at + pad, text)
    return buf


@njit(cache=True, nogil=True)
def as_string_bools(values, err):
    n = values.shape[0]
    lengths = np.empty(n, np.int64)
    for i in range(n):
        lengths[i] = 4 if values[i] else 5
    buf, where = new_tstrings(lengths, err)
    if err[0] != 0:
        return buf
    for i in range(n):
        at = where[i]
        if values[i]:
            buf[at], buf[at + 1], buf[at + 2], buf[at + 3] = 116, 114, 117, 101  # true
        else:
            buf[at], buf[at + 1], buf[at + 2], buf[at + 3], buf[at + 4] = 102, 97, 108, 115, 101  # false
    return buf

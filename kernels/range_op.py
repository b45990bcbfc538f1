"""Range(start, limit, delta) with TF's size rule and values (start + T(i) * delta)."""
import numpy as np
from numba import njit

from .errors import INT64_MAX, int_text, out_of_memory, set_error



@njit(cache=True, nogil=True)
def _text(v):
    """A number as TF's message prints it (%g: six significant digits, no trailing zeros) for
    the usual magnitudes; Numba's str() cannot format floats."""
    if v != v:
        return "nan"
    if v == np.floor(v) and abs(v) < 1e15:
        return int_text(np.int64(v))
    a = abs(np.float64(v))
    if a > 1e15 or a < 1e-4:
        return "inf" if a > 1e300 else ("-" if v < 0 else "") + "~" + str(np.int64(np.log10(a))) + "e"
    exp = np.int64(np.floor(np.log10(a)))
    frac_digits = max(5 - exp, 0)
    scaled = np.int64(np.round(a * 10.0 ** frac_digits))
    digits = str(scaled)
    while len(digits) <= frac_digits:
        digits = "0" + digits
    whole, frac = digits[:len(digits) - frac_digits], digits[len(digits) - frac_digits:]
    while len(frac) > 0 and frac[len(frac) - 1] == "0":
        frac = frac[:len(frac) - 1]
    return ("-" if v < 0 else "") + whole + ("." + frac if len(frac) > 0 else "")


@njit(cache=True, nogil=True)
def range_values(start, limit, delta, is_float, err):
    s, l, d = start[0], limit[0], delta[0]
    out = np.empty(0, start.dtype)
    if d == 0:
        set_error(err, "Requires delta != 0: ", _text(d))
        return out
    if d > 0 and s > l:
        set_error(err, "Requires start <= limit when delta > 0: ", _text(s), "/", _text(l))
        return out
    if d < 0 and s < l:
        set_error(err, "Requires start >= limit when delta < 0: ", _text(s), "/", _text(l))
        return out
    if is_float:
        q = np.ceil(np.abs((l - s) / d))
        if not q <= 9.223372036854775e18:
            set_error(err, "Requires ((limit - start) / delta) <= 9223372036854775807")
            return out
        size = np.int64(q)
    else:  # span and step as uint64: limit - start and abs(INT64_MIN) do not fit an int64
        lo, hi = (np.int64(s), np.int64(l)) if s <= l else (np.int64(l), np.int64(s))
        span = np.uint64(hi) - np.uint64(lo)  # wraps to the exact difference
        step = np.uint64(d) if d > 0 else np.uint64(0) - np.uint64(d)
        count = span // step
        if span % step != 0:  # (no bool + uint64: Numba makes that a float)
            count += np.uint64(1)
        if count > np.uint64(INT64_MAX):
            set_error(err, "Requires ((limit - start) / delta) <= 9223372036854775807")
            return out
        size = np.int64(count)
    try:
        out = np.empty(size, start.dtype)
    except Exception:
        out_of_memory(err, np.array((size,), np.int64))
        return np.empty(0, start.dtype)
    step = np.empty(1, start.dtype)  # i in the input's own type: start + T(i) * delta, as TF
    for i in range(size):
        step[0] = i
        out[i] = s + step[0] * d
    return out

"""Float Maximum and Minimum with TF's bits where they depend on more than the values.

TF's x86 wheel runs them over the flat output in Eigen's AVX packets (8 float32 or 4 float64
lanes) for the first n - n % lanes elements and in scalar code for the rest, on threads that
flush subnormals (denormals-are-zero). Measured against TF 2.21 (issue 5's notes):
- a NaN operand comes back as it is, bits and payload (a signaling one too); the first when both;
- otherwise each operand is read flushed: a subnormal counts, and comes back, as a zero of its
  sign (max(1e-45, 0.5) is 0.5, min(1e-45, 0.5) is +0.0);
- when the two are equal (a +0.0 and a -0.0, after flushing), the packets return the second
  operand and the scalar tail the first: max(-0.0, 0.0) is 0.0 in a packet and -0.0 in the tail.
That holds where an operand has the output's size or is one element (TF's same-shape and scalar
paths). A true broadcast ([n, 1] against [1, m]) runs Eigen's broadcasting blocks, which split
packets and tails otherwise; NumPy's answer is kept there (binary.py documents it).
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _flushed(x, tiny, zero):
    """x, or a zero of its sign when it is subnormal (x * +0.0 keeps the sign, also under DAZ)."""
    return x * zero if abs(x) < tiny else x


@njit(cache=True, nogil=True, inline="always")
def _pick(x, y, tiny, zero, take_max, second_on_tie):
    if x != x:
        return x
    if y != y:
        return y
    x, y = _flushed(x, tiny, zero), _flushed(y, tiny, zero)
    if (x > y) if take_max else (x < y):
        return x
    if (y > x) if take_max else (y < x):
        return y
    return y if second_on_tie else x


@njit(cache=True, nogil=True)
def min_max_as_tf(out, a, b, tiny, lanes, take_max):
    """Rewrites ``out``, the flat Maximum (``take_max``) or Minimum of the flat ``a`` and ``b``,
    with TF's bits where each of a and b has out's size or one element; else leaves it. ``tiny``:
    the dtype's smallest normal number, in a one-element array; ``lanes``: the packet width."""
    n = out.shape[0]
    if not ((a.shape[0] == n or a.shape[0] == 1) and (b.shape[0] == n or b.shape[0] == 1)):
        return
    ia, ib = (1 if a.shape[0] == n else 0), (1 if b.shape[0] == n else 0)
    small = tiny[0]
    zero = small - small
    packets_end = n - n % lanes
    for i in range(packets_end):
        out[i] = _pick(a[i * ia], b[i * ib], small, zero, take_max, True)
    for i in range(packets_end, n):
        out[i] = _pick(a[i * ia], b[i * ib], small, zero, take_max, False)

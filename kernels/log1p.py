"""Log1p of float32 as TensorFlow's x86 CPU kernel computes it, bit for bit.

TF evaluates Log1p with Eigen over the flat tensor: 8-float AVX packets (Packet8f; the wheel is
built without FMA, so a multiply-add rounds twice) for the first n - n % 8 elements, and the C
library's log1pf for the last n % 8. Eigen's packet log1p is Kahan's log1p(x) = x * log(u) / (u - 1),
u = fl(1 + x), with log(u) from a frexp range reduction to [sqrt(1/2), sqrt(2)) and a rational
(3, 3) approximation. It differs from log1pf by up to a few ulps, so TF's bits depend on where an
element sits in its tensor, and a kernel has to follow both paths. The lowering checks that TF on
this machine computes what this kernel does before it fuses a Log1p (codegen/lowerings/log1p.py).
"""
import numpy as np
from numba import njit

PACKET = 8  # floats per AVX register: the elements after the last full packet take the scalar path

_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_SQRT_HALF = np.float32(0.707106781186547524)
_LN2 = np.float32(0.693147180559945309417232121458)
_P0 = np.float32(0.18256296349849254)  # numerator, highest degree first
_P1 = np.float32(1.0000000190281063)
_P2 = np.float32(1.0000000190281136)
_Q0 = np.float32(0.049616247954120038)  # denominator
_Q1 = np.float32(0.59923249590823520)
_Q2 = np.float32(1.4999999999999927)
_Q3 = np.float32(1.0)
_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)
_ALL_ONES = np.uint32(0xFFFFFFFF)  # an invalid lane's result: Eigen ORs in its all-ones mask (a NaN)
_EXP_MASK = np.uint32(0xFF)
_SIGN_MANTISSA = np.uint32(0x807FFFFF)
_HALF_BITS = np.uint32(0x3F000000)
_SIGN = np.uint32(0x80000000)
_MAGNITUDE = np.uint32(0x7FFFFFFF)
_SMALLEST_NORMAL_BITS = np.uint32(0x00800000)
_INF_BITS = np.uint32(0x7F800000)
_QUIET = np.uint32(0x00400000)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _packet_log(u, bits, scratch, scratch_bits):
    """Eigen's plog_float of one lane: u (float32, never subnormal: u = 1 + x) whose bit pattern
    is ``bits``; ``scratch`` is a one-element float32 array viewed as ``scratch_bits`` (uint32)."""
    # pfrexp: mantissa in [0.5, 1) and exponent (zero, inf and NaN pass through with exponent 0)
    biased = np.float32((bits >> np.uint32(23)) & _EXP_MASK)
    if u == _ZERO or biased == np.float32(255.0):
        m, e = u, _ZERO
    else:
        scratch_bits[0] = (bits & _SIGN_MANTISSA) | _HALF_BITS
        m, e = scratch[0], biased - np.float32(126.0)
    # to [sqrt(1/2), sqrt(2)), centred on 0
    tmp = m if m < _SQRT_HALF else _ZERO
    if m < _SQRT_HALF:
        e = e - _ONE
    x = (m - _ONE) + tmp
    p = x * ((_P0 * x + _P1) * x + _P2)
    q = ((_Q0 * x + _Q1) * x + _Q2) * x + _Q3
    r = e * _LN2 + p / q
    if u == _ZERO:
        return _NEG_INF
    if u == _POS_INF:
        r = _POS_INF
    if u < _ZERO or u != u:
        scratch_bits[0] = _ALL_ONES
        r = scratch[0]
    return r


@njit(cache=True, nogil=True, error_model="numpy")  # IEEE division: x / 0 is inf, no exception
def log1p_float32(x):
    """TF's Log1p of the flat, contiguous float32 array ``x`` (a tensor's elements in order)."""
    n = x.shape[0]
    out = np.empty(n, np.float32)
    packed = n - n % PACKET
    x_bits = x.view(np.uint32)
    bits = out.view(np.uint32)
    scratch = np.empty(1, np.float32)
    scratch_bits = scratch.view(np.uint32)
    for i in range(packed):
        out[i] = x[i] + _ONE   # u, read back below as float and as bits
    for i in range(packed):
        v = x[i]
        u = out[i]
        log_u = _packet_log(u, bits[i], scratch, scratch_bits)
        magnitude = x_bits[i] & _MAGNITUDE
        if magnitude != 0 and magnitude < _SMALLEST_NORMAL_BITS:
            bits[i] = x_bits[i] & _SIGN   # TF's threads flush subnormals: a signed zero
        elif magnitude > _INF_BITS:
            bits[i] = x_bits[i] | _QUIET   # a NaN comes out as itself, quieted (x86 propagates it)
        elif u == _ONE or u == log_u:   # tiny x, or u = +inf
            out[i] = v
        else:
            out[i] = v * (log_u / (u - _ONE))
    for i in range(packed, n):
        out[i] = np.log1p(x[i])
    return out

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
_MINUS_ONE = np.float32(-1.0)
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
_ALL_ONES = np.uint32(0xFFFFFFFF)
_SIGN_MANTISSA = np.uint32(0x807FFFFF)
_HALF_BITS = np.uint32(0x3F000000)
_SIGN = np.uint32(0x80000000)
_MAGNITUDE = np.uint32(0x7FFFFFFF)
_SMALLEST_NORMAL_BITS = np.uint32(0x00800000)
_INF_BITS = np.uint32(0x7F800000)
_QUIET = np.uint32(0x00400000)


@njit(cache=True, nogil=True, error_model="numpy")  # IEEE division: x / 0 is inf, no exception
def log1p_float32(x):
    """TF's Log1p of the flat, contiguous float32 array ``x`` (a tensor's elements in order).
    The packet lanes are written as selects over whole arrays (no branches, no calls), so LLVM
    vectorises them; bit patterns are read and written through uint32 views."""
    n = x.shape[0]
    out = np.empty(n, np.float32)
    packed = n - n % PACKET
    out_bits = out.view(np.uint32)
    x_bits = x.view(np.uint32)
    mantissa_bits = np.empty(packed, np.uint32)
    mantissa = mantissa_bits.view(np.float32)
    exponent = np.empty(packed, np.float32)
    for i in range(packed):
        out[i] = x[i] + _ONE   # u
    for i in range(packed):  # pfrexp of u: mantissa in [0.5, 1), biased exponent
        b = out_bits[i]
        mantissa_bits[i] = (b & _SIGN_MANTISSA) | _HALF_BITS
        exponent[i] = np.float32(np.int32(b >> np.uint32(23)) & np.int32(0xFF))
    for i in range(packed):  # plog(u) (u is never subnormal), then Kahan's x * log(u) / (u - 1)
        v = x[i]
        u = out[i]
        through = (u == _ZERO) | (exponent[i] == np.float32(255.0))  # zero, inf, NaN: exponent 0
        m = u if through else mantissa[i]
        e = _ZERO if through else exponent[i] - np.float32(126.0)
        below = m < _SQRT_HALF  # to [sqrt(1/2), sqrt(2)), centred on 0
        e = e - _ONE if below else e
        t = (m - _ONE) + (m if below else _ZERO)
        p = t * ((_P0 * t + _P1) * t + _P2)
        q = ((_Q0 * t + _Q1) * t + _Q2) * t + _Q3
        log_u = e * _LN2 + p / q
        log_u = _POS_INF if u == _POS_INF else log_u
        log_u = _NEG_INF if u == _ZERO else log_u
        out[i] = v if (u == _ONE) | (u == log_u) else v * (log_u / (u - _ONE))  # tiny x, or u = +inf
    for i in range(packed):  # what TF's lanes give beyond the arithmetic above
        b = x_bits[i]
        magnitude = b & _MAGNITUDE
        r = out_bits[i]
        r = _ALL_ONES if x[i] < _MINUS_ONE else r   # u < 0: Eigen's invalid mask, all ones (a NaN)
        r = b & _SIGN if (magnitude != np.uint32(0)) & (magnitude < _SMALLEST_NORMAL_BITS) else r  # flushed
        r = b | _QUIET if magnitude > _INF_BITS else r   # a NaN comes out as itself, quieted
        out_bits[i] = r
    for i in range(packed, n):
        out[i] = np.log1p(x[i])
    return out

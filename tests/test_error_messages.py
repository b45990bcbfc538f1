"""kernels/errors.py's set_error: a message written from its parts (literals, integers, shapes,
runtime text, texts passed as bytes, Assert's summaries) into a kernel's error buffer, as the old
concatenated strings wrote it, and as TF's Assert writes its data."""
import re

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from tf_blade.kernels.assertion import summarize
from tf_blade.kernels.errors import OOM_PREFIX, error_text, message_bytes, new_error_buffer, set_error, text

INT64_MIN, UINT64_MAX = np.int64(-(2 ** 63)), np.uint64(2 ** 64 - 1)


@njit
def _write(err, case, i, dims, u):
    if case == 0:
        set_error(err, "Expected shape dimensions to be non-negative, got ", i)
    elif case == 1:
        set_error(err, "size ", np.int32(7), " is 100% not ", dims, " or ", (i, 3), " u=", u)
    elif case == 2:
        set_error(err, OOM_PREFIX, " tensor with shape", dims[:0])
    elif case == 3:
        set_error(err, "runtime " + "text: ", "caf\u00e9")
    else:
        set_error(err, "first")
        set_error(err, "second")


@pytest.mark.parametrize("case, i, want", [
    (0, -5, "Expected shape dimensions to be non-negative, got -5"),
    (0, INT64_MIN, "Expected shape dimensions to be non-negative, got -9223372036854775808"),
    (1, 0, "size 7 is 100% not [3,-2,0] or [0,3] u=18446744073709551615"),
    (2, 0, OOM_PREFIX + " tensor with shape[]"),
    (3, 0, "runtime text: caf?"),
    (4, 0, "first"),
])
def test_parts_make_the_message(case, i, want):
    err = new_error_buffer()
    _write(err, case, np.int64(i), np.array([3, -2, 0], np.int32), UINT64_MAX)
    assert error_text(err) == want


@pytest.mark.parametrize("size", [1, 2, 9, 10, 40])
def test_a_message_stops_at_the_buffer_end(size):
    """Truncated to the buffer, always ended by a 0, nothing written past it."""
    whole = "size 7 is 100% not [3,-2,0] or [12345,3] u=1"
    err = np.full(size + 8, 255, np.uint8)
    err[:size] = 0
    _write(err[:size], 1, np.int64(12345), np.array([3, -2, 0], np.int64), np.uint64(1))
    assert bytes(err[:size]).split(b"\0")[0].decode() == whole[:size - 1]
    assert err[min(size - 1, len(whole))] == 0
    assert (err[size:] == 255).all()


@njit
def _with_text(err, data):
    set_error(err, "assertion failed: [", text(data), "] [", np.int64(3), "]")


@pytest.mark.parametrize("size, data, want", [
    (1024, message_bytes("x (hashing/stack_1:0) = caf\u00e9"), "assertion failed: [x (hashing/stack_1:0) = caf?] [3]"),
    (1024, np.array([104, 105, 0, 33], np.uint8), "assertion failed: [hi] [3]"),  # a 0 ends a text
    (1024, np.zeros(0, np.uint8), "assertion failed: [] [3]"),
    (22, message_bytes("a long message"), "assertion failed: [a "),  # 21 bytes and the 0
])
def test_text_parts_write_their_bytes(size, data, want):
    """A Text (message text passed to a part's code, errors.text) is written as it is, up to a 0,
    within the buffer."""
    err = np.full(size + 8, 255, np.uint8)
    err[:size] = 0
    _with_text(err[:size], data)
    assert error_text(err[:size]) == want
    assert (err[size:] == 255).all()


@pytest.mark.parametrize("value", [1.5, True])
def test_a_part_it_cannot_write_is_a_typing_error(value):
    @njit
    def with_part(err, x):
        set_error(err, "x = ", x)

    with pytest.raises(TypingError, match="strings, integers and shapes"):
        with_part(new_error_buffer(), value)


@pytest.mark.parametrize("lo_shape, hi_shape", [((3, 2), ()), ((), (2,)), ((2, 2), (3, 1))])
def test_shape_parts_give_tfs_message(lo_shape, hi_shape):
    # ClipByValue names a scalar bound's shape [] although the kernel gets it as a shape-(1,) array
    import tensorflow as tf

    from tf_blade.kernels.clip import clip_by_value
    t = np.zeros((2, 3), np.float32)
    lo, hi = np.zeros(lo_shape or (1,), np.float32), np.ones(hi_shape or (1,), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_error:
        tf.raw_ops.ClipByValue(t=t, clip_value_min=lo.reshape(lo_shape), clip_value_max=hi.reshape(hi_shape))
    err = new_error_buffer()
    clip_by_value(t, lo, hi, lo_shape == (), hi_shape == (), err)
    assert error_text(err) and error_text(err) in tf_error.value.message



@njit
def _assert_message(err, values, limit):
    set_error(err, "assertion failed: [", summarize(values, limit), "]")


@njit
def _assert_message_of_3(err, values):  # a literal limit, as the Assert lowering writes it; a strided vector
    set_error(err, "assertion failed: [", summarize(values.ravel(), 3), "] [", summarize(values[::2], 3), "]")


def _tf_assert_message(data, limit):
    import tensorflow as tf
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_error:
        tf.raw_ops.Assert(condition=False, data=data, summarize=limit)
    return re.search(r"assertion failed: .*?(?= \[Op:Assert\])", tf_error.value.message).group(0)


@pytest.mark.parametrize("limit", [-1, 0, 1, 3, 5, 40])
@pytest.mark.parametrize("values", [[], [7], [1, -2, 3], [0, 1, 2, 3, 4]])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_a_summary_part_prints_what_tfs_assert_prints(values, limit, dtype):
    values = np.array(values, dtype)
    if values.size:
        values[0] = np.iinfo(dtype).min  # the most negative value has no positive twin
    err = new_error_buffer()
    _assert_message(err, values, np.int64(limit))
    assert error_text(err) == _tf_assert_message([values], limit)
    err = new_error_buffer()
    _assert_message_of_3(err, values)
    assert error_text(err) == _tf_assert_message([values, values[::2]], 3)

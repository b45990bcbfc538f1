"""StringSplitV2 (``tf.strings.split``): TF's SplitV2, which follows Python's ``str.split``.

With a separator, every occurrence (leftmost first, never overlapping) ends a token, so empty
tokens are kept and an empty string gives one empty token. Without one (``sep=""``), runs of ASCII
whitespace (space, \\t \\n \\v \\f \\r) separate tokens and none is empty, except where TF differs from
Python: after ``maxsplit`` splits the rest of the string is the last token, even when it is empty
("a b " with maxsplit 2 gives "a", "b", ""). maxsplit 0 gives the whole string; negative means
no limit.

The tokens come back as VIEW tstrings (kernels/strings.py): a size and a pointer into the input's
own bytes. No byte is copied; the caller keeps the owner of those bytes alive as long as the
tokens (the lowering gives it to them as their data), and string values never leave a fused op
(passes/pipeline.py keeps them inside).
"""
import numpy as np
from numba import njit

from .ragged_to_sparse import sparse_of_rows
from .strings import TSTRING_BYTES, put_into, put_view, string_at, string_at_outlined


@njit(cache=True, nogil=True, inline="always")
def _is_space(b):  # absl::ascii_isspace, which TF's str_util uses
    return b == 32 or (b >= 9 and b <= 13)


@njit(cache=True, nogil=True, inline="always")
def _find(buf, pos, end, sep):
    """The first p in [pos, end) where ``sep`` (not empty) occurs in ``buf``, or -1."""
    k = sep.shape[0]
    first = sep[0]
    if k == 1:  # the usual "|" or ",": no inner loop
        for p in range(pos, end):
            if buf[p] == first:
                return p
        return -1
    for p in range(pos, end - k + 1):
        if buf[p] == first:
            j = 1
            while j < k and buf[p + j] == sep[j]:
                j += 1
            if j == k:
                return p
    return -1


@njit(cache=True, nogil=True)
def _split_rows(ids, offsets, data, i, sep, maxsplit, words, starts, m):
    """Splits strings i, i + 1, ... while ``words`` has room for their tokens (VIEW tstrings, 3
    words each); string i's are tokens [starts[i], starts[i + 1]). Returns (the next string, the
    token count, the room in tokens string i needs, or 0 when all are split).

    The caller grows ``words``: reassigning it here cost Numba reference counting per string (3x
    the split). The tokens go straight to their final form: intermediate [begin, end) arrays made
    the split 3x slower inside a fused op, whose other work evicts them before they are read."""
    while i < ids.shape[0]:
        buf, pos, size = string_at(offsets, data, ids[i])
        if 3 * (m + size + 1) > words.shape[0]:  # no string has more than size + 1 tokens
            return i, m, m + size + 1
        end = pos + size
        splits = 0
        if maxsplit == 0:
            put_view(words, m, buf, pos, end)
            m += 1
        elif sep.shape[0] > 0:
            while splits != maxsplit:
                p = _find(buf, pos, end, sep)
                if p < 0:
                    break
                put_view(words, m, buf, pos, p)
                m += 1
                pos = p + sep.shape[0]
                splits += 1
            put_view(words, m, buf, pos, end)  # the rest: after the last separator, or all of it
            m += 1
        else:
            while pos < end and _is_space(buf[pos]):
                pos += 1
            while pos < end:
                stop = pos
                while stop < end and not _is_space(buf[stop]):
                    stop += 1
                put_view(words, m, buf, pos, stop)
                m += 1
                pos = stop
                while pos < end and _is_space(buf[pos]):
                    pos += 1
                splits += 1
                if splits == maxsplit:
                    put_view(words, m, buf, pos, end)  # TF's rest, maybe empty
                    m += 1
                    break
        starts[i + 1] = m
        i += 1
    return i, m, 0


@njit(cache=True, nogil=True)
def _grown(a, need):
    out = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    put_into(out, 0, a)
    return out


@njit(cache=True, nogil=True)
def string_split_v2(ids, offsets, data, sep_ids, sep_offsets, sep_data, maxsplit):
    """StringSplitV2 of the strings ``ids`` (a vector) by the scalar string ``sep_ids[0]``:
    (indices [M, 2] int64, the M tokens as VIEW tstrings, dense shape [2] int64)."""
    n = ids.shape[0]
    sep_buf, sep_start, sep_size = string_at_outlined(sep_offsets, sep_data, sep_ids[0])
    sep = sep_buf[sep_start:sep_start + sep_size]
    per_token = TSTRING_BYTES // 8
    words = np.empty(per_token * (3 * n + 16), np.uint64)  # ~3 tokens a string at first
    starts = np.zeros(n + 1, np.int64)
    i, m, need = _split_rows(ids, offsets, data, np.int64(0), sep, maxsplit, words, starts, np.int64(0))
    while need:
        words = _grown(words, per_token * need)
        i, m, need = _split_rows(ids, offsets, data, i, sep, maxsplit, words, starts, m)
    indices, shape = sparse_of_rows(starts, n)
    return indices, words[:per_token * m].view(np.uint8), shape

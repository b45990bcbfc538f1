"""Assert's message: TF formats each data tensor with Tensor::SummarizeValue."""
from numba import njit

from .errors import int_text


@njit(cache=True, nogil=True)
def summarize(values, limit):
    """An integer vector as TF's Assert prints it: the first ``limit`` elements (all when
    negative), space separated, then "..." if some were left out."""
    n = values.shape[0] if limit < 0 else min(limit, values.shape[0])
    text = ""
    for i in range(n):
        if i > 0:
            text += " "
        text += int_text(values[i])
    if n < values.shape[0]:
        text += "..."
    return text

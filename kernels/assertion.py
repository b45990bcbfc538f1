"""Assert's message: TF formats each data tensor with Tensor::SummarizeValue."""
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

from .errors import Summary, summary_value


@intrinsic
def summarize(typingctx, values, limit):
    """An integer vector as TF's Assert prints it, as a part of errors.set_error's message: the
    first ``limit`` elements (all when negative), space separated, then "..." if some were left
    out. Nothing is formatted unless the message is written."""
    if not (isinstance(values, types.Array) and values.ndim == 1 and isinstance(values.dtype, types.Integer)
            and isinstance(limit, types.Integer)):
        raise TypingError(f"summarize takes an integer vector and an integer limit, not {values}, {limit}")

    def codegen(context, builder, sig, args):
        return summary_value(context, builder, sig.return_type, args[0],
                             context.cast(builder, args[1], sig.args[1], types.int64))
    return Summary(values)(values, limit), codegen

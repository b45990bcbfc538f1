"""Assert's message: TF formats each data tensor with Tensor::SummarizeValue."""
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .errors import Summary


@intrinsic
def summarize(typingctx, values, limit):
    """An integer vector as TF's Assert prints it, as a part of errors.set_error's message: the
    first ``limit`` elements (all when negative), space separated, then "..." if some were left
    out. Nothing is formatted unless the message is written."""
    if not (isinstance(values, types.Array) and values.ndim == 1 and isinstance(values.dtype, types.Integer)
            and isinstance(limit, types.Integer)):
        raise TypingError(f"summarize takes an integer vector and an integer limit, not {values}, {limit}")

    def codegen(context, builder, sig, args):
        summary = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        summary.values = args[0]
        summary.limit = context.cast(builder, args[1], sig.args[1], types.int64)
        return impl_ret_borrowed(context, builder, sig.return_type, summary._getvalue())
    return Summary(values)(values, limit), codegen

"""AttrValue protos -> plain JSON-able Python values (what lowerings and cluster specs see)."""
import base64

import numpy as np


def attr_to_py(value):
    kind = value.WhichOneof("value")
    if kind == "list":
        lst = value.list
        for field in ("s", "i", "f", "b", "type"):
            items = getattr(lst, field)
            if items:
                return [_scalar(field, x) for x in items]
        if lst.shape:
            return [_shape(s) for s in lst.shape]
        return []
    if kind in ("s", "i", "f", "b", "type"):
        return _scalar(kind, getattr(value, kind))
    if kind == "shape":
        return _shape(value.shape)
    if kind == "tensor":
        return tensor_to_py(value.tensor)
    if kind == "func":
        return value.func.name
    return None


def tensor_to_py(tensor_proto):
    from tensorflow.python.framework import tensor_util

    arr = tensor_util.MakeNdarray(tensor_proto)
    if arr.dtype == object:
        values = [base64.b64encode(v).decode("ascii") for v in arr.ravel()]
        dtype = "string"
    else:
        values, dtype = arr.ravel().tolist(), arr.dtype.name
    out = {"dtype": dtype, "shape": list(arr.shape), "values": values}
    if arr.dtype.kind in "fc" and np.isnan(arr).any():  # JSON writes every NaN as NaN: keep sign and payload
        out["bits"] = arr.ravel().view(bits_dtype(arr.dtype)).tolist()
    return out


def bits_dtype(dtype) -> np.dtype:
    """The unsigned integer type as wide as one float (one component of a complex) of ``dtype``:
    the type that carries its exact bits, NaN signs and payloads included."""
    dtype = np.dtype(dtype)
    return np.dtype(f"uint{dtype.itemsize * 8 // (2 if dtype.kind == 'c' else 1)}")


def _scalar(kind, x):
    if kind == "s":
        return x.decode("latin-1")
    if kind == "type":
        return int(x)
    if kind == "f":
        return float(np.float32(x))
    return x


def _shape(shape):
    if shape.unknown_rank:
        return None
    return [d.size for d in shape.dim]

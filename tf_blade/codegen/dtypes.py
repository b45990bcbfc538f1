"""TensorFlow DataType enum values <-> NumPy dtype names, without importing TensorFlow."""

FLOAT32 = 1
STRING = 7
BOOL = 10
INT8, INT16 = 6, 5
RESOURCE = 20

_BY_ENUM = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
    9: "int64", 10: "bool", 17: "uint16", 22: "uint32", 23: "uint64",
}
NUMERIC = {k for k in _BY_ENUM if k != STRING}
INTEGER = {3, 4, 5, 6, 9, 17, 22, 23}
UNSIGNED = {4, 17, 22, 23}  # uint8, uint16, uint32, uint64
FLOAT = {1, 2}
INT32_64 = {3, 9}
MAIN_NUMERIC = {1, 2, 3, 9}  # float32, float64, int32, int64


def numpy_name(enum: int) -> str:
    try:
        return _BY_ENUM[enum]
    except KeyError:
        raise NotImplementedError(f"dtype enum {enum} is not supported by tf_blade kernels")


def supported(enum: int) -> bool:
    return enum in _BY_ENUM

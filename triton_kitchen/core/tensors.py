"""Tensors as Triton names and sizes them: data-type names (config and wire), element sizes, byte sizes.

Two spellings of one data type: a config says ``TYPE_FP32`` (``model_config.proto``'s ``DataType``), the
wire (KServe v2, tritonclient) says ``FP32``; a config's ``TYPE_STRING`` is the wire's ``BYTES``.
"""

from __future__ import annotations

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

# bytes per element, by config name; strings/bytes have no fixed size
DTYPE_SIZES: dict[str, int | None] = {
    "TYPE_BOOL": 1,
    "TYPE_UINT8": 1,
    "TYPE_UINT16": 2,
    "TYPE_UINT32": 4,
    "TYPE_UINT64": 8,
    "TYPE_INT8": 1,
    "TYPE_INT16": 2,
    "TYPE_INT32": 4,
    "TYPE_INT64": 8,
    "TYPE_FP16": 2,
    "TYPE_FP32": 4,
    "TYPE_FP64": 8,
    "TYPE_STRING": None,
    "TYPE_BF16": 2,
    "TYPE_INVALID": None,
}


def dtype_name(value: int | str | None) -> str:
    """The config name: ``TYPE_FP32`` for the enum value 11, for ``"FP32"`` or ``"TYPE_FP32"``; the wire's
    ``BYTES`` is ``TYPE_STRING``; ``TYPE_<n>`` for an unknown number, ``?`` for None."""
    if value is None:
        return "?"
    if isinstance(value, str):
        up = value.upper()
        if up == "BYTES":
            return "TYPE_STRING"
        return up if up.startswith("TYPE_") else "TYPE_" + up
    try:
        return mc.DataType.Name(value)
    except ValueError:
        return f"TYPE_{value}"


def wire_name(value: int | str | None) -> str:
    """The wire name (KServe v2): ``FP32`` for ``TYPE_FP32``; ``BYTES`` for ``TYPE_STRING``; ``?`` for None."""
    if value is None:
        return "?"
    name = dtype_name(value).removeprefix("TYPE_")
    return "BYTES" if name == "STRING" else name


def short_name(value: int | str | None) -> str:
    """The config name without ``TYPE_`` (``FP32``, ``STRING``): how diagrams label a tensor."""
    return "?" if value is None else dtype_name(value).removeprefix("TYPE_")


def element_size(value: int | str) -> int | None:
    """Bytes per element, or None when it has no fixed size (strings) or is unknown."""
    return DTYPE_SIZES.get(dtype_name(value))


def tensor_bytes(data_type: str | int, dims, batch: int = 1, wildcard: int | None = None) -> int | None:
    """Bytes of one tensor: ``batch`` x product(dims) x element size.

    ``-1`` dims count as ``wildcard`` when given, else the size is unknown (None); so is
    ``TYPE_STRING``.  ``tensor_bytes("TYPE_FP32", [3, 224, 224], batch=8)`` is 4,816,896.
    """
    size = element_size(data_type)
    if size is None:
        return None
    n = 1
    for d in dims:
        d = int(d)
        if d < 0:
            if wildcard is None:
                return None
            d = wildcard
        n *= d
    return n * size * max(int(batch), 0)


def array_wire_name(array: np.ndarray) -> str:
    """The wire name of a numpy array's data type (``float32`` -> ``FP32``, object/bytes -> ``BYTES``)."""
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(np.asarray(array).dtype)


def array_bytes(array) -> int:
    """Bytes of a tensor's data as Triton carries it (BYTES: a 4-byte length prefix per element)."""
    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind in "SU":
        return sum(4 + len(v if isinstance(v, bytes) else str(v).encode()) for v in array.reshape(-1))
    return int(array.nbytes)


def format_bytes(n: int | float | None) -> str:
    """SI units, as the tutorial writes them: 4816896 -> '4.8 MB'."""
    if n is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{int(n)} B"

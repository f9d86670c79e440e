"""The element type and shape of one value, and bytes per element of each ONNX type."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from onnxlint.analyses.capability import Shape
from onnxlint.analyses.shapes import dtype_name

_DTYPE_BYTES: dict[str, float] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float16": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "float8e4m3fn": 1,
    "float8e4m3fnuz": 1,
    "float8e5m2": 1,
    "float8e5m2fnuz": 1,
    "int4": 0.5,
    "uint4": 0.5,
    "float4e2m1": 0.5,
}


def dtype_bytes(dtype: str | None) -> float | None:
    """Bytes per element, None when unknown (strings, sequences, unknown types)."""
    return _DTYPE_BYTES.get(dtype) if dtype else None


@dataclass(frozen=True, slots=True)
class ValueType:
    """Element type and shape of one value; either may be unknown (None)."""

    dtype: str | None = None
    shape: Shape = None


def vi_type(vi: onnx.ValueInfoProto) -> ValueType:
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        return ValueType()
    tt = t.tensor_type
    return ValueType(dtype_name(tt.elem_type), tensor_shape(tt))


def tensor_shape(tt: onnx.TypeProto.Tensor) -> Shape:
    """The shape of a tensor type: a static dim as int, a ``dim_param`` as str, else None;
    None when the type has no shape."""
    if not tt.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return tuple(dims)

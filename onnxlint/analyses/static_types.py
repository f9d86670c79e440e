"""What is known statically about one value (:class:`ValueType`), read from a
``TypeProto``, and the table of them as the symbolic cache keeps it.

A leaf of the analyses: the Shapes analysis (``analyses.shapes``, which re-exports these
names) and everything that reads its tables build on it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import onnx

Dim = int | str | None

# ``unk__12`` (ONNX data propagation, ORT), ``Reshape_3_o0__d1`` (ORT), ``_d0`` style
_GENERATED_DIM = re.compile(r"^(unk__\d+|.*_o\d+__d\d+|\?)$")


def is_generated_dim(name: str) -> bool:
    """Whether a ``dim_param`` was invented by an inferencer rather than named by the exporter."""
    return bool(_GENERATED_DIM.match(name))


@functools.lru_cache(maxsize=64)
def dtype_name(elem_type: int) -> str | None:
    """``onnx.TensorProto.FLOAT16`` -> ``"float16"``; None for UNDEFINED or unknown codes.

    Cached: one string per type, not one per value of a large graph."""
    if not elem_type:
        return None
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ValueType:
    """What is known statically about one value.

    ``dtype`` is the lowercased ``TensorProto.DataType`` name (``"float"``,
    ``"int64"``...), None when unknown. ``shape`` is None when even the rank is
    unknown; each dim is an int (static), a str (symbolic) or None (unknown).
    ``kind`` is ``"tensor"``, ``"sequence"``, ``"map"``, ``"optional"``,
    ``"sparse_tensor"`` or ``"unknown"``; only tensors have shapes here.
    """

    dtype: str | None
    shape: tuple[Dim, ...] | None
    kind: str = "tensor"

    @property
    def is_static(self) -> bool:
        """Rank and every dim are known integers."""
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def has_unknown(self) -> bool:
        """Unknown rank or at least one dim nobody can name (not even symbolically)."""
        return self.shape is None or None in self.shape

    @property
    def symbolic_dims(self) -> tuple[tuple[int, str], ...]:
        """(position, name) of every symbolic dim."""
        if self.shape is None:
            return ()
        return tuple((i, d) for i, d in enumerate(self.shape) if isinstance(d, str))

    def describe(self) -> str:
        dims = (
            "?" if self.shape is None else "[" + ", ".join(_dim_text(d) for d in self.shape) + "]"
        )
        return f"{self.dtype or '?'}{dims}"


def _dim_text(d: Dim) -> str:
    return "?" if d is None else str(d)


def _dims(shape: onnx.TensorShapeProto) -> tuple[Dim, ...]:
    out: list[Dim] = []
    for d in shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value" and d.dim_value >= 0:
            out.append(int(d.dim_value))
        elif which == "dim_param" and d.dim_param and not is_generated_dim(d.dim_param):
            out.append(d.dim_param)
        else:
            out.append(None)
    return tuple(out)


def value_type_of(tp: onnx.TypeProto) -> ValueType:
    """The :class:`ValueType` a ``TypeProto`` declares."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        tt = tp.tensor_type
        shape = _dims(tt.shape) if tt.HasField("shape") else None
        return ValueType(dtype_name(tt.elem_type), shape)
    if which == "sparse_tensor_type":
        st = tp.sparse_tensor_type
        shape = _dims(st.shape) if st.HasField("shape") else None
        return ValueType(dtype_name(st.elem_type), shape, "sparse_tensor")
    if which == "sequence_type":
        elem = value_type_of(tp.sequence_type.elem_type)
        return ValueType(elem.dtype, None, "sequence")
    if which == "map_type":
        return ValueType(None, None, "map")
    if which == "optional_type":
        elem = value_type_of(tp.optional_type.elem_type)
        return ValueType(elem.dtype, elem.shape, "optional")
    return ValueType(None, None, "unknown")


def types_to_json(table: dict[str, ValueType]) -> list[list[Any]]:
    """A types table as the symbolic cache keeps it (``analyses.symbolic_cache``)."""
    return [
        [name, vt.dtype, None if vt.shape is None else list(vt.shape), vt.kind]
        for name, vt in table.items()
    ]


def types_from_json(data: Any) -> dict[str, ValueType] | None:
    """The table :func:`types_to_json` wrote; None when ``data`` is not one."""
    if not isinstance(data, list):
        return None
    table: dict[str, ValueType] = {}
    seen: dict[ValueType, ValueType] = {}
    for row in data:
        if not (isinstance(row, list) and len(row) == 4):
            return None
        name, dtype, shape, kind = row
        dims_ok = shape is None or (
            isinstance(shape, list) and all(d is None or type(d) in (int, str) for d in shape)
        )
        if not (
            isinstance(name, str)
            and (dtype is None or isinstance(dtype, str))
            and isinstance(kind, str)
            and dims_ok
        ):
            return None
        vt = ValueType(dtype, None if shape is None else tuple(shape), kind)
        table[name] = seen.setdefault(vt, vt)  # one object per type, as collect_value_types
    return table


def filled_from(onnx_vt: ValueType, ort_vt: ValueType) -> ValueType:
    """Fill ONNX's unknowns from ORT's answer; ONNX wins wherever it knows something."""
    if onnx_vt.kind != "tensor" or ort_vt.kind != "tensor":
        return onnx_vt
    dtype = onnx_vt.dtype or ort_vt.dtype
    if onnx_vt.shape is None:
        return ValueType(dtype, ort_vt.shape)
    if ort_vt.shape is None or len(ort_vt.shape) != len(onnx_vt.shape):
        return ValueType(dtype, onnx_vt.shape)
    dims = tuple(
        a if a is not None else b for a, b in zip(onnx_vt.shape, ort_vt.shape, strict=True)
    )
    return ValueType(dtype, dims)

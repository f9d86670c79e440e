"""Small integer tensors evaluated element by element, symbolic dims included.

The shape vectors exporters build (``Shape -> Gather -> Unsqueeze -> Concat``) are
tracked per element: a known int, a symbolic expression such as ``(batch)*(4)``, or
unknown. Only tensors of at most :data:`MAX_TRACKED_ELEMENTS` elements are tracked, and
constant data is read only when it is inline (never external data).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import onnx

from onnxlint.tensors import inline_array

if TYPE_CHECKING:
    from onnxlint.index import NodeRef


Elem = int | str | None


#: a value is evaluated element-wise only when it has at most this many elements
MAX_TRACKED_ELEMENTS = 64


#: marker in :meth:`Dataflow.symbols` for an unknown dim or a loop counter
UNKNOWN_SYMBOL = "?"


_INT_TYPES = frozenset(
    {
        onnx.TensorProto.INT64,
        onnx.TensorProto.INT32,
        onnx.TensorProto.INT16,
        onnx.TensorProto.INT8,
        onnx.TensorProto.UINT8,
        onnx.TensorProto.UINT16,
        onnx.TensorProto.UINT32,
        onnx.TensorProto.UINT64,
    }
)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def elem_symbols(value: Sequence[Elem]) -> frozenset[str]:
    out: set[str] = set()
    for e in value:
        if e is None:
            out.add(UNKNOWN_SYMBOL)
        elif isinstance(e, str):
            out |= set(_IDENT.findall(e)) or {UNKNOWN_SYMBOL}
    return frozenset(out)


def symbols_of(shape: Sequence[Elem]) -> frozenset[str]:
    return elem_symbols([d for d in shape if not isinstance(d, int)])


def int_attr(node: NodeRef, name: str, default: int) -> int:
    a = node.attr(name)
    return int(a.i) if a is not None and a.type == onnx.AttributeProto.INT else default


def tensor_elems(t: onnx.TensorProto) -> tuple[Elem, ...] | None:
    if t.data_type not in _INT_TYPES:
        return None
    arr = inline_array(t, max_elements=MAX_TRACKED_ELEMENTS)  # never external data
    return None if arr is None else tuple(int(v) for v in arr.reshape(-1).tolist())


def constant_elems(n: onnx.NodeProto) -> tuple[Elem, ...] | None:
    for a in n.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return tensor_elems(a.t)
        if a.name == "value_int":
            return (int(a.i),)
        if a.name == "value_ints":
            return tuple(int(v) for v in a.ints) if len(a.ints) <= MAX_TRACKED_ELEMENTS else None
    return None


def evaluate(
    op: str, node: NodeRef, vals: list[tuple[Elem, ...] | None]
) -> tuple[Elem, ...] | None:
    """The elements ``op`` computes from its inputs' elements (None: unknown or unsupported)."""
    fn = _EVALUATORS.get(op)
    if fn is None:
        return None
    try:
        return fn(node, vals)
    except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError):
        return None


def _passthrough(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
    return vals[0] if vals else None


def _cast(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
    to = node.attr("to")
    if to is None or to.i not in _INT_TYPES:
        return None
    return vals[0] if vals else None


def _gather(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
    if int_attr(node, "axis", 0) != 0 or len(vals) < 2:
        return None
    data, idx = vals[0], vals[1]
    if data is None or idx is None or any(not isinstance(i, int) for i in idx):
        return None
    return tuple(data[int(i)] for i in idx)  # type: ignore[arg-type]


def _concat(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
    if any(v is None for v in vals):
        return None
    return tuple(e for v in vals for e in v)  # type: ignore[union-attr]


def _slice(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
    data = vals[0] if vals else None
    if data is None or len(vals) < 3:
        return None
    params = [vals[i] if i < len(vals) else None for i in range(1, 5)]
    starts, ends, axes, steps = params
    if starts is None or ends is None or len(starts) != 1 or len(ends) != 1:
        return None
    if axes is not None and tuple(axes) not in ((0,), (-1,)):
        return None
    start, end, step = starts[0], ends[0], steps[0] if steps else 1
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(step, int)) or step == 0:
        return None
    return tuple(data[start:end:step])


def _arith(symbol: str, fn: Callable[[int, int], int]) -> Callable[..., tuple[Elem, ...] | None]:
    def run(node: NodeRef, vals: list[tuple[Elem, ...] | None]) -> tuple[Elem, ...] | None:
        if len(vals) != 2 or vals[0] is None or vals[1] is None:
            return None
        a, b = vals[0], vals[1]
        if len(a) != len(b):
            if len(a) == 1:
                a = a * len(b)
            elif len(b) == 1:
                b = b * len(a)
            else:
                return None
        out: list[Elem] = []
        for x, y in zip(a, b, strict=True):
            if isinstance(x, int) and isinstance(y, int):
                out.append(fn(x, y))
            elif x is None or y is None:
                out.append(None)
            else:
                out.append(f"({x}){symbol}({y})" if symbol else None)
        return tuple(out)

    return run


_EVALUATORS: dict[
    str, Callable[[NodeRef, list[tuple[Elem, ...] | None]], tuple[Elem, ...] | None]
] = {
    "Identity": _passthrough,
    "Squeeze": _passthrough,
    "Unsqueeze": _passthrough,
    "Reshape": _passthrough,
    "Flatten": _passthrough,
    "Cast": _cast,
    "Gather": _gather,
    "Concat": _concat,
    "Slice": _slice,
    "Add": _arith("+", lambda x, y: x + y),
    "Sub": _arith("-", lambda x, y: x - y),
    "Mul": _arith("*", lambda x, y: x * y),
    "Div": _arith("/", lambda x, y: x // y),
}

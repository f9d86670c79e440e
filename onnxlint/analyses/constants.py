"""Constant values a graph states inline: an initializer, or a ``Constant`` node's tensor.

The pattern checks (QDQ selectors, fusions, partition chains) read small constants in the
same way; they read them here. Values come only from inline data
(:func:`onnxlint.tensors.inline_array`): an external file is never opened.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxlint.index import GraphRef
from onnxlint.tensors import DEFAULT_MAX_ELEMENTS, inline_array


def constant_tensor(g: GraphRef, name: str, outer: bool = False) -> onnx.TensorProto | None:
    """The tensor of ``name`` when an initializer or a ``Constant`` node's ``value`` holds
    it; with ``outer``, a body's enclosing graphs are searched too (a captured constant)."""
    cur: GraphRef | None = g
    while cur is not None:
        t = cur.initializers.get(name)
        if t is not None:
            return t
        p = cur.producers.get(name)
        if p is not None:
            if p.op_type != "Constant":
                return None
            attr = p.attr("value")
            return attr.t if attr is not None and attr.HasField("t") else None
        cur = cur.outer if outer else None
    return None


def constant_array(
    g: GraphRef, name: str, max_elements: int = DEFAULT_MAX_ELEMENTS, outer: bool = False
) -> np.ndarray | None:
    """:func:`constant_tensor`'s value when it is inline and has at most ``max_elements``."""
    t = constant_tensor(g, name, outer)
    return inline_array(t, max_elements=max_elements) if t is not None else None


def constant_ints(g: GraphRef, name: str, max_elements: int = 8) -> list[int] | None:
    """The values of a small integer constant, flattened; None otherwise."""
    arr = constant_array(g, name, max_elements)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    return [int(v) for v in arr.reshape(-1)]


def scalar_constant(g: GraphRef, name: str, outer: bool = False) -> float | None:
    """The value of a one-element numeric constant; None otherwise."""
    arr = constant_array(g, name, 1, outer)
    if arr is None or arr.size != 1 or arr.dtype.kind not in "fiu":
        return None
    return float(arr.reshape(-1)[0])

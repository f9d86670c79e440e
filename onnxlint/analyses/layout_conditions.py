"""Conditions of ``partitioning.layout_pass_failures`` that look past the node itself: what
makes an EP refuse a layout-sensitive node once ORT has rewritten it to the EP's layout."""

from __future__ import annotations

from collections.abc import Sequence

from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.index import NodeRef


def channel_mismatch(n: NodeRef, la: LevelAssignment) -> str | None:
    """Input 0's channel dim (dim 1) against the weight's input channels times ``group``,
    both known: what they are when they differ."""
    na = la.get(n.path)
    shapes = na.facts.input_shapes if na is not None else ()
    if len(shapes) < 2 or not shapes[0] or not shapes[1]:
        return None
    x, w = shapes[0], shapes[1]
    if len(x) < 2 or len(w) < 2 or type(x[1]) is not int or type(w[1]) is not int:
        return None
    group = na.facts.attributes.get("group", 1) if na is not None else 1
    if not isinstance(group, int) or x[1] == w[1] * group:
        return None
    return f"input 0 has {x[1]} channels, the weight takes {w[1]} x group {group}"


def reshaped_unit_input(n: NodeRef, unit: Sequence[str], slot: int) -> str | None:
    """Input ``slot`` of the QDQ unit ``n`` targets (``unit``: its members' paths) is the
    unit's DequantizeLinear of a Reshape's output: what the Reshape is, when it is."""
    if slot >= len(n.inputs) or not n.inputs[slot]:
        return None
    g = n.graph
    dq = g.producers.get(n.inputs[slot])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.path not in unit or not dq.inputs:
        return None
    src = g.producers.get(dq.inputs[0])
    if src is None or src.op_type != "Reshape":
        return None
    return f"input {slot} is the DequantizeLinear {dq.label} of Reshape {src.label}'s output"

"""The links of ``partitioning.finalize_failures`` chains (``profiles.model.ChainLink``):
the nodes of a chain found inside one partition, and the conditions a link may set on
its node (a one-element constant input, an axis outside the previous Slice's axes, a
Squeeze that leaves its output's rank to a dynamic dim, a per-axis quantization scale, boxes
whose coordinate count the partition cannot work out), and the zero points of a per-axis
DequantizeLinear."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import onnx

from onnxlint.analyses.constants import constant_ints, scalar_constant
from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.index import GraphRef, NodeRef
from onnxlint.tensors import inline_array

if TYPE_CHECKING:
    from onnxlint.profiles.model import ChainLink


def chain_from(
    g: GraphRef,
    n: NodeRef,
    chain: Sequence[ChainLink],
    members: set[str],
    la: LevelAssignment | None = None,
    prev: NodeRef | None = None,
) -> list[NodeRef] | None:
    """The nodes of ``chain`` starting at ``n`` (fed by ``prev``, the previous link), each
    feeding the next, all in ``members``."""
    link = chain[0]
    if n.op_type != link.op or n.path not in members:
        return None
    if link.constant is not None and not any(
        scalar_constant(g, name) == link.constant for name in n.inputs if name
    ):
        return None
    if link.axis_outside_slice and not _axis_outside_slice(g, n, prev, la):
        return None
    if link.squeezes_dynamic_dims and not _squeezes_dynamic_dims(n, la):
        return None
    if link.per_axis_scale and not per_axis_scale(la, n):
        return None
    if link.coords_unresolved and not coords_unresolved(n, la, members):
        return None
    if len(chain) == 1:
        return [n]
    slot = chain[1].fed_at
    for name in n.outputs:
        for c in g.consumers.get(name, []) if name else []:
            if slot is not None and (slot >= len(c.inputs) or c.inputs[slot] != name):
                continue
            rest = chain_from(g, c, chain[1:], members, la, n)
            if rest is not None:
                return [n, *rest]
    return None


def per_axis_scale(la: LevelAssignment | None, n: NodeRef) -> bool:
    """Whether ``n``'s scale (input 1) is known to have more than one element."""
    na = la.get(n.path) if la is not None else None
    shapes = na.facts.input_shapes if na is not None else ()
    shape = shapes[1] if len(shapes) > 1 else None
    if shape is None:
        return False
    count = 1
    for d in shape:
        if not isinstance(d, int):
            return False
        count *= d
    return count > 1


#: the most zero points :func:`per_axis_zero_points` reads (one per output channel)
MAX_ZERO_POINTS = 1 << 16


def per_axis_zero_points(
    la: LevelAssignment | None, n: NodeRef, slot: int
) -> frozenset[int] | None:
    """The distinct zero points of the DequantizeLinear feeding input ``slot`` of ``n`` when
    it quantizes per axis (its scale has more than one element; no zero point input means
    0): None for another producer, a per-tensor scale, or a zero point that is not an inline
    initializer of the graph (or an enclosing one) that no graph input overrides."""
    if slot >= len(n.inputs) or not n.inputs[slot]:
        return None
    dq = n.graph.producers.get(n.inputs[slot])
    if dq is None or dq.op_type != "DequantizeLinear" or not per_axis_scale(la, dq):
        return None
    if len(dq.inputs) < 3 or not dq.inputs[2]:
        return frozenset({0})
    name = dq.inputs[2]
    g: GraphRef | None = dq.graph
    while g is not None and name not in g.initializers:
        if name in g.producers or name in g.input_set:
            return None
        g = g.outer
    if g is None or name in g.input_set:
        return None
    arr = inline_array(g.initializers[name], max_elements=MAX_ZERO_POINTS)
    # int4 and uint4 come back as ml_dtypes' types (numpy kind "V"), named so
    if arr is None or not (arr.dtype.kind in "iu" or arr.dtype.name in ("int4", "uint4")):
        return None
    return frozenset(int(v) for v in arr.astype(np.int64).reshape(-1).tolist())


def _axis_outside_slice(
    g: GraphRef, n: NodeRef, prev: NodeRef | None, la: LevelAssignment | None
) -> bool:
    """Whether ``n``'s ``axis`` is none of the axes ``prev``, a Slice with constant axes (or
    starts, when it has no axes input), slices; False when a rank or a value is unknown."""
    na = la.get(n.path) if la is not None else None
    shapes = na.facts.input_shapes if na is not None else ()
    if prev is None or prev.op_type != "Slice" or not shapes or shapes[0] is None:
        return False
    rank = len(shapes[0])
    has_axes = len(prev.inputs) > 3 and bool(prev.inputs[3])
    values = constant_ints(g, prev.inputs[3] if has_axes else prev.inputs[1])
    if values is None:
        return False
    sliced = {a % rank for a in values} if has_axes else set(range(len(values)))
    axis = next((a.i for a in n.node.attribute if a.name == "axis"), 0)
    return axis % rank not in sliced


def _squeezes_dynamic_dims(n: NodeRef, la: LevelAssignment | None) -> bool:
    """Whether ``n`` squeezes every unit dim of its first input (no ``axes`` attribute, or
    below opset 13, no ``axes`` input from 13) while that input has a dim that is not a
    known number: the output's rank then waits on the run; False when the rank is unknown."""
    na = la.get(n.path) if la is not None else None
    shapes = na.facts.input_shapes if na is not None else ()
    if not shapes or shapes[0] is None:
        return False
    if any(a.name == "axes" for a in n.node.attribute):
        return False
    if len(n.inputs) > 1 and n.inputs[1]:
        return False
    return any(not isinstance(d, int) for d in shapes[0])


#: the most tensors :func:`coords_unresolved` visits before it gives up (no match)
MAX_COORD_WALK = 50_000
_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                          onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE})  # fmt: skip


def coords_unresolved(n: NodeRef, la: LevelAssignment | None, members: set[str]) -> bool:
    """Whether ``n``'s first input has a last dim that is not a known number and is computed,
    through nodes of ``members`` (a branch's outer names read in the graph around it), from a
    tensor made outside them or from a graph input that is not a float tensor of static dims:
    the compiler then cannot work that dim out either. Constants and initializers resolve."""
    na = la.get(n.path) if la is not None else None
    shapes = na.facts.input_shapes if na is not None else ()
    if not shapes or shapes[0] is None or not n.inputs or isinstance(shapes[0][-1], int):
        return False
    seen: set[tuple[str, str]] = set()
    stack: list[tuple[GraphRef, str]] = [(n.graph, n.inputs[0])]
    while stack:
        g, name = stack.pop()
        if not name or (g.path, name) in seen:
            continue
        seen.add((g.path, name))
        if len(seen) > MAX_COORD_WALK:
            return False
        scope: GraphRef | None = g
        while scope is not None and not scope.is_defined_here(name):
            scope = scope.outer
        if scope is None or name in scope.initializers:
            continue
        p = scope.producers.get(name)
        if p is None:
            if scope.outer is not None or not _static_float_input(scope, name):
                return True
            continue
        if p.op_type == "Constant":
            continue
        if p.path not in members:
            return True
        stack.extend((scope, i) for i in p.inputs)
    return False


def _static_float_input(g: GraphRef, name: str) -> bool:
    """Whether graph input ``name`` of ``g`` is a float tensor whose dims are all numbers."""
    vi = next((v for v in (g.proto.input if g.proto is not None else ()) if v.name == name), None)
    if vi is None or not vi.type.HasField("tensor_type"):
        return False
    t = vi.type.tensor_type
    if t.elem_type not in _FLOAT_TYPES or not t.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in t.shape.dim)

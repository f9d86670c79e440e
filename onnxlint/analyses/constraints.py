"""A profile's declarative constraints checked against the facts of one node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from onnxlint.analyses.einsum_forms import forms_of
from onnxlint.diagnostics import GENERATED_DIM
from onnxlint.profiles import Constraint

if TYPE_CHECKING:
    from onnxlint.analyses.capability import Dim, NodeFacts, Shape

#: constraint kinds about shapes: a refusal by one of them is a ``shape`` verdict
SHAPE_KINDS = frozenset({"max_rank", "min_rank", "static_shape", "known_shape", "no_zero_dims"})
#: constraint kinds that read the values of static dimensions, not only ranks and which
#: dims are zero or symbolic: ``NodeFacts.key`` keeps the sizes of the ops they apply to
DIM_VALUE_KINDS = frozenset({"channel_vector", "multiple_of", "whole_dequantized_scales"})


def _slots(c: Constraint, facts: NodeFacts) -> tuple[list[int], list[int]]:
    if c.inputs is None and c.outputs is None:
        return list(range(facts.num_inputs)), list(range(facts.num_outputs))
    return list(c.inputs or ()), list(c.outputs or ())


def _shape(facts: NodeFacts, io: str, i: int) -> Shape:
    shapes = facts.input_shapes if io == "input" else facts.output_shapes
    return shapes[i] if i < len(shapes) else None


def _any_slot_holds_elements(facts: NodeFacts, slots: list[tuple[str, int]]) -> bool:
    """Whether one of ``slots`` has a known shape with no zero-sized dimension."""
    for io, i in slots:
        shape = _shape(facts, io, i)
        if shape is not None and 0 not in shape:
            return True
    return False


def shown_dim(d: Dim) -> str:
    """A dynamic dimension as a message names it. The only place a check reads a symbolic
    dim's name: ``NodeFacts.key`` keys symbolic dims by this text, so nodes whose dims
    shape inference named one by one (unk__17, unk__18) share one evaluation."""
    # a name shape inference made up (unk__12) means nothing to the user
    return "?" if d is None or GENERATED_DIM.match(str(d)) else str(d)


@dataclass(frozen=True)
class Problem:
    """What violates a constraint: a short text, and the offending slot when there is one."""

    text: str
    io: str | None = None
    slot: int | None = None


def check_constraint(c: Constraint, facts: NodeFacts) -> Problem | None:
    """None when ``c`` holds for ``facts``, else what offends it (and which slot, as fields)."""
    if c.op_excluded(facts.op_type):
        return None
    if c.graph_nodes_at_most is not None and (
        facts.graph_node_count is None or facts.graph_node_count > c.graph_nodes_at_most
    ):
        return None
    if c.when_input_empty is not None and _holds_elements(facts, c.when_input_empty):
        return None
    if c.unless_inputs_known and all(
        i in facts.constant_inputs or i in facts.known_inputs for i in c.unless_inputs_known
    ):
        return None
    if c.kind == "always":
        return Problem("")
    if c.kind in SHAPE_KINDS:
        ins, outs = _slots(c, facts)
        slots = [
            ("input", i)
            for i in ins
            if facts.has_input(i)
            and not (c.skip_constant_inputs and i in facts.constant_inputs)
            and not (c.graph_inputs_only and i not in facts.graph_inputs)
        ]
        if c.graph_inputs_only:
            outs = []
        slots += [("output", i) for i in outs if facts.has_output(i)]
        for io, i in slots:
            shape = _shape(facts, io, i)
            if c.kind == "max_rank" and shape is not None and len(shape) > (c.value or 0):
                return Problem(f"{io} {i} has rank {len(shape)}", io, i)
            if c.kind == "min_rank" and shape is not None and len(shape) < (c.value or 0):
                return Problem(f"{io} {i} has rank {len(shape)}", io, i)
            if c.kind == "known_shape" and shape is None:
                return Problem(f"{io} {i} has an unknown rank", io, i)
            if c.kind == "no_zero_dims" and shape is not None and 0 in shape:
                if c.only_beside_elements and not _any_slot_holds_elements(facts, slots):
                    continue
                return Problem(f"{io} {i} has a zero-sized dimension", io, i)
            if c.kind == "static_shape":
                if shape is None:
                    return Problem(f"{io} {i} has an unknown shape", io, i)
                bad = [d for d in shape if not (isinstance(d, int) and d >= 0)]
                if bad:
                    shown = [shown_dim(d) for d in bad]
                    dims = ", ".join(shown)
                    when = " (computed at run time)" if "?" in shown else ""
                    return Problem(f"{io} {i} has dynamic dimension(s) {dims}{when}", io, i)
        return None
    if c.kind == "constant_input":
        for i in c.inputs or ():
            if facts.has_input(i) and i not in facts.constant_inputs:
                shape = _shape(facts, "input", i)
                if shape is not None and 0 in shape:
                    continue  # an empty tensor carries no values to be constant
                return Problem(f"input {i} is not a constant", "input", i)
        return None
    if c.kind == "input_absent":
        for i in c.inputs or ():
            if facts.has_input(i):
                return Problem(f"input {i} is present", "input", i)
        return None
    if c.kind == "output_absent":
        for i in c.outputs or ():
            if facts.has_output(i):
                return Problem(f"output {i} is requested", "output", i)
        return None
    if c.kind == "min_inputs":
        present = sum(1 for i in range(facts.num_inputs) if facts.has_input(i))
        return Problem(f"it has {present} input(s)") if present < (c.value or 0) else None
    if c.kind == "not_graph_input":
        for i in c.inputs or ():
            if i in facts.graph_inputs:
                return Problem(f"input {i} is a graph input", "input", i)
        return None
    if c.kind == "not_graph_output":
        for i in c.outputs or ():
            if i in facts.graph_outputs:
                return Problem(f"output {i} is a graph output", "output", i)
        return None
    if c.kind == "attribute":
        name = c.name or ""
        if c.absent:
            return Problem(f"attribute {name} is set") if name in facts.attributes else None
        value = _plain(facts.attributes.get(name, c.default))
        if value is None:
            return None
        if c.allowed is not None and value not in [_plain(v) for v in c.allowed]:
            return Problem(f"{name}={value!r}")
        if c.forbidden is not None and value in [_plain(v) for v in c.forbidden]:
            return Problem(f"{name}={value!r}")
        return None
    if c.kind == "pad_room":
        return _pad_room_problem(c, facts)
    if c.kind == "index_room":
        room = facts.index_room
        if room is None or room >= (c.value or 0):
            return None
        return Problem(f"a constant index lies {-room} outside the axis's range", "input", 1)
    if c.kind == "finite_scale":
        return (
            Problem("its scale (input 1) holds an infinity or a NaN", "input", 1)
            if facts.nonfinite_scale
            else None
        )
    if c.kind == "whole_dequantized_scales":
        return _dequantized_scales_problem(c, facts)
    if c.kind == "einsum_equation":
        return _einsum_problem(c, facts)
    if c.kind == "channel_vector":
        return _channel_vector_problem(c, facts)
    if c.kind == "multiple_of":
        return _multiple_of_problem(c, facts)
    return None  # unknown kinds are rejected by the schema


def _channel_vector_problem(c: Constraint, facts: NodeFacts) -> Problem | None:
    """An input of ``c.inputs`` that is not a 1-D tensor of one value per channel of input
    0 (its dimension 1); unknown shapes never refuse."""
    data = _shape(facts, "input", 0)
    channels = data[1] if data is not None and len(data) > 1 else None
    if not isinstance(channels, int):
        return None
    for i in c.inputs or ():
        shape = _shape(facts, "input", i) if facts.has_input(i) else None
        if shape is not None and (len(shape) != 1 or shape[0] != channels):
            dims = ", ".join(shown_dim(d) if not isinstance(d, int) else str(d) for d in shape)
            return Problem(
                f"input {i} has shape [{dims}], not one value per channel ([{channels}])",
                "input",
                i,
            )
    return None


def _multiple_of_problem(c: Constraint, facts: NodeFacts) -> Problem | None:
    """The attribute ``c.name``, or with ``c.inputs`` the dimension of that input on the
    axis attribute ``c.axis_attribute`` (``c.default`` when unset) names, is not a multiple
    of the attribute ``c.divisor``. An unset or non-positive divisor and an unknown
    dimension never refuse."""
    divisor = _plain(facts.attributes.get(c.divisor or ""))
    if not isinstance(divisor, int) or divisor <= 0:
        return None
    if c.inputs:
        slot = c.inputs[0]
        shape = _shape(facts, "input", slot) if facts.has_input(slot) else None
        axis = _plain(facts.attributes.get(c.axis_attribute or "", c.default))
        if shape is None or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
            return None
        dim = shape[axis]
        if isinstance(dim, int) and dim % divisor:
            return Problem(
                f"input {slot} has dimension {dim} on axis {axis}, not a multiple of "
                f"{c.divisor}={divisor}",
                "input",
                slot,
            )
        return None
    value = _plain(facts.attributes.get(c.name or "", c.default))
    if isinstance(value, int) and value % divisor:
        return Problem(f"{c.name}={value} is not a multiple of {c.divisor}={divisor}")
    return None


def _pad_room_problem(c: Constraint, facts: NodeFacts) -> Problem | None:
    """A Pad whose ``pad_room`` is below ``c.value`` while its attribute ``c.name`` (default
    ``c.default``) is one of ``c.allowed``; unknown pads or shapes never refuse."""
    if c.name is not None:
        value = _plain(facts.attributes.get(c.name, c.default))
        if value not in [_plain(v) for v in c.allowed or ()]:
            return None
    room = facts.pad_room
    if room is None or room >= (c.value or 0):
        return None
    return Problem(f"a pad amount reaches {-room} past the input's dimension - 1", "input", 1)


def _einsum_problem(c: Constraint, facts: NodeFacts) -> Problem | None:
    """The node's ``equation`` has none of the forms ``c.allowed`` names (an unknown or
    absent equation never refuses)."""
    equation = _plain(facts.attributes.get("equation"))
    if not isinstance(equation, str):
        return None
    if set(forms_of(equation)) & set(c.allowed or ()):
        return None
    return Problem(f"equation={equation!r}")


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return v


def _holds_elements(facts: NodeFacts, slot: int) -> bool:
    """Whether input ``slot`` is present with a shape known to hold at least one element."""
    if slot in facts.absent_inputs or slot >= len(facts.input_shapes):
        return False
    shape = facts.input_shapes[slot]
    return shape is not None and all(isinstance(d, int) and d > 0 for d in shape)


def _dequantized_scales_problem(c: Constraint, facts: NodeFacts) -> Problem | None:
    """A Resize whose dequantized scales (``NodeFacts.dequantized_scales``) give one of the
    first ``c.value`` axes (batch, channels) of a static size a size that is not whole."""
    got = facts.dequantized_scales or ()
    data = _shape(facts, "input", 0)
    if data is None or len(data) != len(got):
        return None
    for axis, (v, d) in enumerate(zip(got[: c.value or 0], data, strict=False)):
        if isinstance(d, int) and d > 0 and float(np.float32(v) * d) % 1:
            shown = ", ".join(f"{x:.8g}" for x in got)
            return Problem(
                f"its scales (input 2) dequantize to [{shown}]: {d} x {v:.8g} on axis {axis}"
                " is not a whole size",
                "input",
                2,
            )
    return None

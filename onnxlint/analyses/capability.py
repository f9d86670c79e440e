"""Per-node EP capability: would this execution provider claim this node, and if not, why?

:func:`evaluate` is pure: it reads a :class:`~onnxlint.profiles.Profile` and the
:class:`NodeFacts` of one node and returns a :class:`Verdict`. It knows nothing
about graphs, partitions or diagnostics; the engine builds ``NodeFacts`` from
its shared opset/shape/constness analyses and turns verdicts into diagnostics.

Checks run in the order ORT's own capability code meets them: the operator
domain, the model's opset range, the op type, the operator revision, the
element types, then the declarative constraints (op-specific first, then the
EP-wide ones). The first refusal wins. Constraints whose effect is
``fails_after_claim`` never refuse; the first one that applies is reported in
``Verdict.fails_after_claim`` of an otherwise positive verdict.

Unknown facts (``None``) never cause a refusal on their own, except where a
constraint requires the fact to be known (``static_shape``, ``known_shape``):
an EP that needs a static shape refuses a tensor whose shape nobody knows.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from onnxlint.analyses.constraints import (
    DIM_VALUE_KINDS,
    SHAPE_KINDS,
    check_constraint,
    shown_dim,
)
from onnxlint.analyses.op_revisions import compress_opsets, opsets_for, revision_of
from onnxlint.profiles import Constraint, OpRange, OpSupport, Profile

__all__ = [
    "Dim",
    "NodeFacts",
    "Shape",
    "Verdict",
    "VerdictKind",
    "evaluate",
]

Dim = int | str | None
"""One dimension: an int (static), a str (symbolic ``dim_param``) or None (unknown)."""
Shape = tuple[Dim, ...] | None
"""A tensor shape; None when even the rank is unknown."""

VerdictKind = Literal["supported", "op", "revision", "dtype", "constraint", "domain", "shape"]


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the evaluator needs to know about one node; all of it plain data.

    Per-slot tuples are indexed by input/output position. An absent optional
    input or output (empty name in the NodeProto) is listed in ``absent_inputs``
    / ``absent_outputs``; its dtype/shape entries are None.

    - ``domain``: normalised; ``""`` becomes ``"ai.onnx"``.
    - ``since_version``: the resolved operator revision (``Conv`` imported at
      opset 17 is revision 11); None when unknown (a custom op).
    - ``opset``: the opset the model imports for ``domain``.
    - ``input_dtypes``/``output_dtypes``: ONNX element-type names (``"float"``,
      ``"float16"``, ``"int64"``...), None when unknown.
    - ``input_type_params``/``output_type_params``: the type-constraint name
      from the op schema for each slot (``"T"``, ``"T1"``), None when the slot
      has a fixed type or the schema is unknown.
    - ``input_shapes``/``output_shapes``: see :data:`Shape`.
    - ``constant_inputs``: slots fed by an initializer or a Constant-derived value.
    - ``dequantized_inputs``: slots fed by a DequantizeLinear of constants (a quantized
      weight); they count as constants for profiles with ``dequantized_constants``.
    - ``graph_inputs``: input slots fed directly by a graph input.
    - ``graph_outputs``: output slots that are graph outputs.
    - ``attributes``: attribute values as plain Python (int, float, str, lists; tensors as None).
    - ``graph_node_count``: nodes in the node's graph (some EPs refuse lone nodes
      of tiny models); None when unknown.
    - ``pad_room``: for a Pad whose pads are a constant (and no axes input) and whose
      data has a static shape, the least ``dim - 1 - pad`` over every axis and both
      sides (negative when a pad reaches past the input's last element); None otherwise.
    - ``index_room``: for a Gather whose indices are a constant and whose data has a
      static dimension on its axis, the least room of an index within ``[-dim, dim)``
      (``dim - 1 - i``, or ``dim + i`` for a negative one; negative when out of range);
      None otherwise.
    - ``nonfinite_scale``: for a QuantizeLinear or DequantizeLinear (either domain), whether
      its scale (input 1) is a small inline constant holding an infinity or a NaN (the
      quantizer's calibration of a tensor with an infinite value gives one); False when
      the scale is finite, computed or too large to read.
    - ``dequantized_scales``: for a Resize whose scales are computed by a DequantizeLinear
      (either domain) of a small constant, or of a QuantizeLinear of one (as QNN's
      quantization config writes it), the scales as float32 arithmetic dequantizes them
      (``(q - zero_point) * scale``), as OpenVINO reads them; None otherwise.
    - ``known_inputs``: input slots (not initializers) whose values are known before the
      run, computed from constants and static shapes alone (onnxlint's dataflow: an If's
      condition that compares a rank, or a static dim); see ``LevelGraph.known_values``.
    """

    op_type: str
    domain: str = "ai.onnx"
    since_version: int | None = None
    opset: int | None = None
    input_dtypes: tuple[str | None, ...] = ()
    output_dtypes: tuple[str | None, ...] = ()
    input_type_params: tuple[str | None, ...] = ()
    output_type_params: tuple[str | None, ...] = ()
    input_shapes: tuple[Shape, ...] = ()
    output_shapes: tuple[Shape, ...] = ()
    constant_inputs: frozenset[int] = frozenset()
    dequantized_inputs: frozenset[int] = frozenset()
    graph_inputs: frozenset[int] = frozenset()
    graph_outputs: frozenset[int] = frozenset()
    absent_inputs: frozenset[int] = frozenset()
    absent_outputs: frozenset[int] = frozenset()
    attributes: Mapping[str, Any] = field(default_factory=dict, hash=False)
    graph_node_count: int | None = None
    name: str = ""
    pad_room: int | None = None
    index_room: int | None = None
    known_inputs: frozenset[int] = frozenset()
    nonfinite_scale: bool = False
    dequantized_scales: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.domain in ("", "ai.onnx"):
            object.__setattr__(self, "domain", "ai.onnx")

    @property
    def num_inputs(self) -> int:
        return max(len(self.input_dtypes), len(self.input_shapes), len(self.input_type_params))

    @property
    def num_outputs(self) -> int:
        return max(len(self.output_dtypes), len(self.output_shapes), len(self.output_type_params))

    def has_input(self, i: int) -> bool:
        return i < self.num_inputs and i not in self.absent_inputs

    def has_output(self, i: int) -> bool:
        return i < self.num_outputs and i not in self.absent_outputs

    def qualified_op(self) -> str:
        return self.op_type if self.domain == "ai.onnx" else f"{self.domain}.{self.op_type}"

    def key(
        self, node_count_cap: int | None = None, symbols: bool = True, sizes: bool = False
    ) -> tuple[Any, ...]:
        """Everything :func:`evaluate` reads, hashable: nodes with equal keys get equal verdicts.

        ``name`` is left out (no profile looks at node names), and positive static
        dimensions count as 1: shape constraints only ask about ranks, zero-sized,
        symbolic and unknown dimensions, and messages name only the non-static ones.
        So the thousands of MatMul/Add nodes of a large graph share one evaluation per EP.
        A symbolic dimension counts as the text a message shows for it
        (:func:`~onnxlint.analyses.constraints.shown_dim`): the names shape inference makes
        up (unk__17, unk__18) are all "?", so do not set nodes apart.
        ``node_count_cap``: the largest ``graph_nodes_at_most`` of the profiles asked
        (see :func:`node_count_cap`); graph sizes above it count as one.
        ``symbols=False``: symbolic dimensions count as one name. No check compares
        names, but messages print them: a verdict shared this way is only right for
        another node when its reasons name no symbol (the caller checks).
        ``sizes=True``: positive static dimensions count as themselves, for the ops a
        constraint reads dimension values of (see :func:`sized_ops`).
        """
        count = self.graph_node_count
        if node_count_cap is not None and count is not None and count > node_count_cap:
            count = node_count_cap + 1
        attrs = tuple(
            (k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(self.attributes.items())
        )
        return (
            self.op_type,
            self.domain,
            self.since_version,
            self.opset,
            self.input_dtypes,
            self.output_dtypes,
            self.input_type_params,
            self.output_type_params,
            _shape_classes(self.input_shapes, symbols, sizes),
            _shape_classes(self.output_shapes, symbols, sizes),
            self.constant_inputs,
            self.dequantized_inputs,
            self.graph_inputs,
            self.graph_outputs,
            self.absent_inputs,
            self.absent_outputs,
            attrs,
            count,
            self.pad_room,
            self.index_room,
            self.known_inputs,
            self.nonfinite_scale,
            self.dequantized_scales,
        )


def node_count_cap(profiles: Sequence[Profile]) -> int:
    """The largest graph size any constraint of ``profiles`` distinguishes (0 when none does)."""
    cap = 0
    for p in profiles:
        groups = [p.global_constraints]
        for support in p.ops.values():
            groups.append(support.constraints)
            groups += [r.constraints for r in support.ranges or ()]
        for group in groups:
            for c in group:
                if c.graph_nodes_at_most is not None:
                    cap = max(cap, c.graph_nodes_at_most)
    return cap


def sized_ops(profiles: Sequence[Profile]) -> frozenset[tuple[str, str]]:
    """The (domain, op type) pairs whose constraints in ``profiles`` read dimension values
    (not only ranks and zero or symbolic dims): their nodes are keyed with their sizes."""
    out: set[tuple[str, str]] = set()
    for p in profiles:
        for support in p.ops.values():
            groups = [support.constraints, *(r.constraints for r in support.ranges or ())]
            if any(c.kind in DIM_VALUE_KINDS for group in groups for c in group):
                out.add((support.domain, support.op))
    return frozenset(out)


def _shape_classes(
    shapes: tuple[Shape, ...], symbols: bool = True, sizes: bool = False
) -> tuple[Shape, ...]:
    if sizes:
        return tuple(
            None
            if s is None
            else tuple((shown_dim(d) if symbols else "?") if type(d) is str else d for d in s)
            for s in shapes
        )
    if symbols:
        return tuple(None if s is None else _shape_class(s) for s in shapes)
    return tuple(
        None
        if s is None
        else tuple(1 if type(d) is int and d > 0 else ("?" if type(d) is str else d) for d in s)
        for s in shapes
    )


# a value's shape is keyed by its producer and by each consumer, most often one after the
# other in graph order: a small cache answers those repeats (the key of every node of a
# large graph reads three to four shapes)
@functools.lru_cache(maxsize=4096)
def _shape_class(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """A shape as ``NodeFacts.key`` counts it (symbolic dims by their shown text)."""
    return tuple(
        1 if type(d) is int and d > 0 else (shown_dim(d) if type(d) is str else d) for d in shape
    )


def symbols_of(facts: NodeFacts) -> frozenset[str]:
    """The symbolic dimension names of a node's inputs and outputs."""
    return frozenset(
        d for s in (*facts.input_shapes, *facts.output_shapes) if s for d in s if type(d) is str
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """The EP's answer for one node.

    ``claimed`` is what ORT's partitioner would report. ``kind`` is
    ``supported`` when claimed, else the first reason for refusal.
    ``fails_after_claim`` is set when the node is claimed but session creation
    is known to fail because of it. ``supported_opsets`` (revision refusals
    only) lists the model opsets at which this op would be claimed.
    ``provenance`` is the profile's provenance id for the deciding fact.
    """

    ep: str
    profile: str
    claimed: bool
    kind: VerdictKind
    reason: str
    fails_after_claim: str | None = None
    supported_opsets: tuple[int, ...] = ()
    provenance: str | None = None
    constraint: str | None = None
    #: the offending slot of a constraint refusal, ``("input", 2)``; None when none is
    slot: tuple[str, int] | None = None


# ---------------------------------------------------------------------------
# The evaluator


def evaluate(profile: Profile, facts: NodeFacts) -> Verdict:
    """Would ``profile``'s EP claim the node described by ``facts``?"""
    if profile.dequantized_constants and not facts.dequantized_inputs <= facts.constant_inputs:
        facts = replace(facts, constant_inputs=facts.constant_inputs | facts.dequantized_inputs)
    ep = profile.label
    op = facts.qualified_op()

    def refuse(
        kind: VerdictKind,
        reason: str,
        provenance: str | None = None,
        opsets: tuple[int, ...] = (),
        constraint: str | None = None,
    ) -> Verdict:
        return Verdict(
            ep=profile.ep,
            profile=profile.id,
            claimed=False,
            kind=kind,
            reason=reason,
            supported_opsets=opsets,
            provenance=provenance,
            constraint=constraint,
        )

    # 1. Domain.
    if not profile.claims_domain(facts.domain):
        return refuse(
            "domain",
            f"{ep} does not claim operators from domain '{facts.domain}' ({op})",
        )

    # 2. Model-level opset limits for this domain.
    limit = profile.opsets.get(facts.domain)
    outside = limit.refusal(facts.opset) if limit is not None and facts.opset is not None else None
    if limit is not None and outside is not None:
        reason, provenance = outside
        span = f"{limit.min or 1}-{limit.max}" if limit.max else f"{limit.min}+"
        why = f": {reason}" if reason else ""
        support = profile.lookup(facts.domain, facts.op_type)
        opsets = opsets_for(profile, support) if support else ()
        return refuse(
            "revision",
            f"{ep} supports {facts.domain} opsets {span}; this model imports opset "
            f"{facts.opset}{why}",
            provenance,
            opsets,
        )

    # 3. Op type.
    support = profile.lookup(facts.domain, facts.op_type)
    if support is None:
        if profile.unlisted_ops == "claim":
            return _constraints_verdict(profile, facts, None, None, ep, op)
        return refuse("op", f"{ep} has no implementation of {op}")

    # 4. Operator revision.
    revision = facts.since_version
    if revision is None and facts.opset is not None:
        revision = revision_of(facts.op_type, facts.domain, facts.opset)
    rng: OpRange | None
    if revision is None:
        rng = support.ranges[-1] if support.ranges else OpRange(first=1)
    else:
        rng = support.range_for(revision)
        if rng is None:
            opsets = opsets_for(profile, support)
            ranges = ", ".join(r.label() for r in support.ranges or ())
            at = f" (opset {facts.opset})" if facts.opset is not None else ""
            hint = f"; it would be claimed at opset {compress_opsets(opsets)}" if opsets else ""
            return refuse(
                "revision",
                f"{ep} implements {op} revisions {ranges}, not revision {revision}{at}{hint}",
                support.provenance,
                opsets,
            )

    # 5. Element types.
    types: dict[str, frozenset[str]] = {**support.types, **rng.types}
    io_types = support.graph_io_types
    if types or io_types:
        for io, dtypes, params in (
            ("input", facts.input_dtypes, facts.input_type_params),
            ("output", facts.output_dtypes, facts.output_type_params),
        ):
            short = "in" if io == "input" else "out"
            for i, dtype in enumerate(dtypes):
                if dtype is None or (io == "input" and not facts.has_input(i)):
                    continue
                param = params[i] if i < len(params) else None
                boundary = i in (facts.graph_inputs if io == "input" else facts.graph_outputs)
                for key in (f"{short}:{i}", param):
                    allowed = types.get(key) if key else None
                    if allowed is not None and dtype not in allowed:
                        label = f" (type {key})" if key == param else ""
                        return refuse(
                            "dtype",
                            f"{ep} does not support {op} with {dtype} on {io} {i}{label}; "
                            f"supported: {', '.join(sorted(allowed))}",
                            support.provenance,
                        )
                    io_allowed = io_types.get(key) if key and boundary else None
                    if io_allowed is not None and dtype not in io_allowed:
                        return refuse(
                            "dtype",
                            f"{ep} does not support {op} with {dtype} on a graph {io} "
                            f"({io} {i}); supported there: {', '.join(sorted(io_allowed))}",
                            support.provenance,
                        )

    # 6. Element types accepted EP-wide.
    td = profile.tensor_dtypes
    io_failure: str | None = None
    if td is not None:
        slots = [("input", i, d) for i, d in enumerate(facts.input_dtypes) if facts.has_input(i)]
        slots += [("output", i, d) for i, d in enumerate(facts.output_dtypes)]
        for io, i, dtype in slots:
            if dtype is None:
                continue
            graph_io = i in (facts.graph_inputs if io == "input" else facts.graph_outputs)
            if graph_io and dtype in td.fails_on_graph_io and io_failure is None:
                io_failure = (
                    f"{ep} claims {op} but session creation fails: it cannot compile a "
                    f"{dtype} graph {io} ({io} {i})"
                )
            if graph_io and dtype in td.forbidden_on_graph_io:
                return refuse(
                    "dtype",
                    f"{ep} does not support {dtype} on a graph {io} ({op} {io} {i}): {td.reason}",
                    td.provenance or support.provenance,
                )
            constant = io == "input" and i in facts.constant_inputs
            allowed = td.allowed
            if constant and td.allowed_constant is not None:
                allowed = td.allowed_constant
            if dtype not in allowed:
                return refuse(
                    "dtype",
                    f"{ep} does not support {dtype} tensors ({op} {io} {i}): {td.reason}",
                    td.provenance or support.provenance,
                )

    return _constraints_verdict(profile, facts, support, rng, ep, op, io_failure)


def _constraints_verdict(
    profile: Profile,
    facts: NodeFacts,
    support: OpSupport | None,
    rng: OpRange | None,
    ep: str,
    op: str,
    io_failure: str | None = None,
) -> Verdict:
    constraints: list[Constraint] = []
    if support is not None:
        constraints.extend(support.constraints)
    if rng is not None:
        constraints.extend(rng.constraints)
    constraints.extend(profile.global_constraints)
    default_prov = support.provenance if support is not None else None

    fails: str | None = io_failure
    fails_prov: str | None = (
        profile.tensor_dtypes.provenance if io_failure and profile.tensor_dtypes else None
    )
    for c in constraints:
        problem = check_constraint(c, facts)
        if problem is None:
            continue
        detail = f" ({problem.text})" if problem.text else ""
        if c.effect == "fails_after_claim":
            if fails is None:
                fails = f"{ep} claims {op} but session creation fails: {c.reason}{detail}"
                fails_prov = c.provenance or default_prov
            continue
        return Verdict(
            ep=profile.ep,
            profile=profile.id,
            claimed=False,
            kind="shape" if c.kind in SHAPE_KINDS else "constraint",
            reason=f"{ep} does not claim {op}: {c.reason}{detail}",
            provenance=c.provenance or default_prov,
            constraint=c.kind,
            slot=(problem.io, problem.slot) if problem.io and problem.slot is not None else None,
        )
    return Verdict(
        ep=profile.ep,
        profile=profile.id,
        claimed=True,
        kind="supported",
        reason=f"{ep} claims {op}",
        fails_after_claim=fails,
        provenance=fails_prov or default_prov,
    )

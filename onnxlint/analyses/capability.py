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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from onnxlint.diagnostics import GENERATED_DIM
from onnxlint.profiles import Constraint, OpRange, OpSupport, Profile

__all__ = [
    "Dim",
    "NodeFacts",
    "Shape",
    "Verdict",
    "VerdictKind",
    "evaluate",
    "facts_from_node",
    "revision_of",
]

Dim = int | str | None
"""One dimension: an int (static), a str (symbolic ``dim_param``) or None (unknown)."""
Shape = tuple[Dim, ...] | None
"""A tensor shape; None when even the rank is unknown."""

VerdictKind = Literal["supported", "op", "revision", "dtype", "constraint", "domain", "shape"]

_SHAPE_KINDS = frozenset({"max_rank", "min_rank", "static_shape", "known_shape", "no_zero_dims"})


@dataclass(frozen=True)
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

    def key(self, node_count_cap: int | None = None, symbols: bool = True) -> tuple[Any, ...]:
        """Everything :func:`evaluate` reads, hashable: nodes with equal keys get equal verdicts.

        ``name`` is left out (no profile looks at node names), and positive static
        dimensions count as 1: shape constraints only ask about ranks, zero-sized,
        symbolic and unknown dimensions, and messages name only the non-static ones.
        So the thousands of MatMul/Add nodes of a large graph share one evaluation per EP.
        ``node_count_cap``: the largest ``graph_nodes_at_most`` of the profiles asked
        (see :func:`node_count_cap`); graph sizes above it count as one.
        ``symbols=False``: symbolic dimensions count as one name. No check compares
        names, but messages print them: a verdict shared this way is only right for
        another node when its reasons name no symbol (the caller checks).
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
            _shape_classes(self.input_shapes, symbols),
            _shape_classes(self.output_shapes, symbols),
            self.constant_inputs,
            self.dequantized_inputs,
            self.graph_inputs,
            self.graph_outputs,
            self.absent_inputs,
            self.absent_outputs,
            attrs,
            count,
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


def _shape_classes(shapes: tuple[Shape, ...], symbols: bool = True) -> tuple[Shape, ...]:
    return tuple(
        None
        if s is None
        else tuple(
            1 if type(d) is int and d > 0 else (d if symbols or type(d) is not str else "?")
            for d in s
        )
        for s in shapes
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
# Operator revisions (onnx.defs is imported lazily: it is only needed for
# nodes whose revision the caller did not resolve, and for "would work at").


@lru_cache(maxsize=4096)
def revision_of(op_type: str, domain: str, opset: int) -> int | None:
    """The since_version of ``op_type`` in ``domain`` at ``opset``; None if unknown."""
    import onnx.defs

    d = "" if domain == "ai.onnx" else domain
    try:
        return int(onnx.defs.get_schema(op_type, opset, d).since_version)
    except Exception:
        return None


@lru_cache(maxsize=1)
def _latest_onnx_opset() -> int:
    import onnx.defs

    return int(onnx.defs.onnx_opset_version())


def _opsets_for(profile: Profile, support: OpSupport) -> tuple[int, ...]:
    """Model opsets at which ``support`` covers the op's revision (within the EP's opset limits)."""
    limit = profile.opsets.get(support.domain)
    if support.domain == "ai.onnx":
        hi = limit.max if limit and limit.max else _latest_onnx_opset()
    else:
        hi = limit.max if limit and limit.max else 0
    lo = limit.min if limit and limit.min else 1
    out: list[int] = []
    for opset in range(lo, hi + 1):
        rev = revision_of(support.op, support.domain, opset)
        if rev is not None and support.range_for(rev) is not None:
            out.append(opset)
    return tuple(out)


def _compress(opsets: Sequence[int]) -> str:
    """(7, 8, 9, 13) -> '7-9, 13'."""
    spans: list[list[int]] = []
    for o in opsets:
        if spans and o == spans[-1][1] + 1:
            spans[-1][1] = o
        else:
            spans.append([o, o])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


# ---------------------------------------------------------------------------
# Constraints


def _slots(c: Constraint, facts: NodeFacts) -> tuple[list[int], list[int]]:
    if c.inputs is None and c.outputs is None:
        return list(range(facts.num_inputs)), list(range(facts.num_outputs))
    return list(c.inputs or ()), list(c.outputs or ())


def _shape(facts: NodeFacts, io: str, i: int) -> Shape:
    shapes = facts.input_shapes if io == "input" else facts.output_shapes
    return shapes[i] if i < len(shapes) else None


@dataclass(frozen=True)
class Problem:
    """What violates a constraint: a short text, and the offending slot when there is one."""

    text: str
    io: str | None = None
    slot: int | None = None


def _check(c: Constraint, facts: NodeFacts) -> Problem | None:
    """None when ``c`` holds for ``facts``, else what offends it (and which slot, as fields)."""
    if c.op_excluded(facts.op_type):
        return None
    if c.graph_nodes_at_most is not None and (
        facts.graph_node_count is None or facts.graph_node_count > c.graph_nodes_at_most
    ):
        return None
    if c.kind == "always":
        return Problem("")
    if c.kind in _SHAPE_KINDS:
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
                return Problem(f"{io} {i} has a zero-sized dimension", io, i)
            if c.kind == "static_shape":
                if shape is None:
                    return Problem(f"{io} {i} has an unknown shape", io, i)
                bad = [d for d in shape if not (isinstance(d, int) and d >= 0)]
                if bad:
                    # a name shape inference made up (unk__12) means nothing to the user
                    shown = [
                        "?" if d is None or GENERATED_DIM.match(str(d)) else str(d) for d in bad
                    ]
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
    return None  # unknown kinds are rejected by the schema


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return v


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
    if limit is not None and facts.opset is not None:
        too_new = limit.max is not None and facts.opset > limit.max
        too_old = limit.min is not None and facts.opset < limit.min
        if too_new or too_old:
            span = f"{limit.min or 1}-{limit.max}" if limit.max else f"{limit.min}+"
            why = f": {limit.reason}" if limit.reason else ""
            support = profile.lookup(facts.domain, facts.op_type)
            opsets = _opsets_for(profile, support) if support else ()
            return refuse(
                "revision",
                f"{ep} supports {facts.domain} opsets {span}; this model imports opset "
                f"{facts.opset}{why}",
                limit.provenance,
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
            opsets = _opsets_for(profile, support)
            ranges = ", ".join(r.label() for r in support.ranges or ())
            at = f" (opset {facts.opset})" if facts.opset is not None else ""
            hint = f"; it would be claimed at opset {_compress(opsets)}" if opsets else ""
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
        problem = _check(c, facts)
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
            kind="shape" if c.kind in _SHAPE_KINDS else "constraint",
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


# ---------------------------------------------------------------------------
# Building facts for single-node test models


def _dtype_name(elem_type: int) -> str | None:
    import onnx

    if not elem_type:
        return None
    return onnx.TensorProto.DataType.Name(elem_type).lower()


def _value_type(vi: Any) -> tuple[str | None, Shape]:
    t = vi.type
    which = t.WhichOneof("value")
    if which != "tensor_type":
        if which == "sequence_type" and t.sequence_type.elem_type.HasField("tensor_type"):
            return _dtype_name(t.sequence_type.elem_type.tensor_type.elem_type), None
        return None, None
    tt = t.tensor_type
    dtype = _dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, None
    dims: list[Dim] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dtype, tuple(dims)


def facts_from_node(
    node: Any,
    value_infos: Sequence[Any] | Mapping[str, Any],
    *,
    opset: int | None = None,
    constant_names: frozenset[str] | set[str] = frozenset(),
    graph_input_names: frozenset[str] | set[str] = frozenset(),
    graph_output_names: frozenset[str] | set[str] = frozenset(),
    graph_node_count: int | None = None,
) -> NodeFacts:
    """Build :class:`NodeFacts` for one ``onnx.NodeProto`` from ``ValueInfoProto`` s.

    Meant for single-node test models (e.g. the ONNX backend node tests); the
    engine builds NodeFacts from its shared analyses instead. ``value_infos``
    may be a list of ValueInfoProto or a name -> ValueInfoProto mapping.
    """
    import onnx
    import onnx.helper

    vis = (
        dict(value_infos)
        if isinstance(value_infos, Mapping)
        else {vi.name: vi for vi in value_infos}
    )
    domain = node.domain or "ai.onnx"
    since = revision_of(node.op_type, domain, opset) if opset is not None else None
    schema = None
    if opset is not None:
        try:
            d = "" if domain == "ai.onnx" else domain
            schema = onnx.defs.get_schema(node.op_type, opset, d)
        except Exception:
            schema = None

    def params(formals: Sequence[Any], count: int) -> tuple[str | None, ...]:
        if not formals:
            return (None,) * count
        out: list[str | None] = []
        assert schema is not None, "formals come from the schema, so there is one"
        constraint_names = {tc.type_param_str for tc in schema.type_constraints}
        for i in range(count):
            f = formals[min(i, len(formals) - 1)]
            out.append(f.type_str if f.type_str in constraint_names else None)
        return tuple(out)

    def io(names: Sequence[str]) -> tuple[tuple[str | None, ...], tuple[Shape, ...]]:
        dts: list[str | None] = []
        shapes: list[Shape] = []
        for n in names:
            if n and n in vis:
                d, s = _value_type(vis[n])
            else:
                d, s = None, None
            dts.append(d)
            shapes.append(s)
        return tuple(dts), tuple(shapes)

    in_dt, in_sh = io(node.input)
    out_dt, out_sh = io(node.output)
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH):
            attrs[a.name] = None
            continue
        try:
            v = onnx.helper.get_attribute_value(a)
        except ValueError:  # e.g. a ref_attr_name outside a function: value unknown
            attrs[a.name] = None
            continue
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list):
            v = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
        attrs[a.name] = v
    return NodeFacts(
        op_type=node.op_type,
        domain=domain,
        since_version=since,
        opset=opset,
        input_dtypes=in_dt,
        output_dtypes=out_dt,
        input_type_params=params(schema.inputs if schema else [], len(node.input)),
        output_type_params=params(schema.outputs if schema else [], len(node.output)),
        input_shapes=in_sh,
        output_shapes=out_sh,
        constant_inputs=frozenset(i for i, n in enumerate(node.input) if n and n in constant_names),
        graph_inputs=frozenset(i for i, n in enumerate(node.input) if n and n in graph_input_names),
        graph_outputs=frozenset(
            i for i, n in enumerate(node.output) if n and n in graph_output_names
        ),
        absent_inputs=frozenset(i for i, n in enumerate(node.input) if not n),
        absent_outputs=frozenset(i for i, n in enumerate(node.output) if not n),
        attributes=attrs,
        graph_node_count=graph_node_count,
        name=node.name,
    )


def facts_from_model(model: Any, node_index: int = 0) -> NodeFacts:
    """NodeFacts for node ``node_index`` of a (single-node) ModelProto, after shape inference."""
    import onnx.shape_inference

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    g = inferred.graph
    node = g.node[node_index]
    wanted = {"", "ai.onnx"} if node.domain in ("", "ai.onnx") else {node.domain}
    opset = next((o.version for o in inferred.opset_import if o.domain in wanted), None)
    vis = [*g.input, *g.value_info, *g.output]
    inits = {t.name for t in g.initializer}
    consts = set(inits)
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            consts.update(n.output)
    graph_inputs = {i.name for i in g.input} - inits
    return facts_from_node(
        node,
        vis + [_vi_from_init(t) for t in g.initializer],
        opset=opset,
        constant_names=frozenset(consts),
        graph_input_names=frozenset(graph_inputs),
        graph_output_names=frozenset(o.name for o in g.output),
        # ORT turns Constant nodes into initializers before any EP sees the graph.
        graph_node_count=sum(1 for n in g.node if n.op_type != "Constant"),
    )


def _vi_from_init(t: Any) -> Any:
    import onnx.helper

    return onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))

"""Execution-provider capability profiles: loading, validation, alias resolution.

A profile is a JSON document (``rules/eps/<id>.json``, schema in
``rules/schema/ep-profile.schema.json``) that says which nodes one ONNX Runtime
execution provider claims and how it partitions. This module turns such a
document into an immutable :class:`Profile`; :mod:`onnxlint.analyses.capability`
evaluates nodes against it.

Start-up stays cheap: resolving ``--ep qnn`` reads only ``rules/eps/index.json``
(ids, EP names, aliases); a profile file is parsed and validated the first time
it is asked for and cached for the life of the process. ``jsonschema`` is
imported only when a profile is actually validated.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from onnxlint.data import data_dir

__all__ = [
    "Constraint",
    "OpRange",
    "OpSupport",
    "Profile",
    "ProfileError",
    "ProfileInfo",
    "Provenance",
    "RequantizedConstantFailure",
    "TensorDtypes",
    "UnknownProfileError",
    "all_profiles",
    "json_path",
    "list_profiles",
    "load_profile",
    "load_profile_file",
    "resolve",
    "validate_profile_data",
]

EPS_DIR = "eps"
INDEX_FILE = "index.json"
SCHEMA_FILE = "schema/ep-profile.schema.json"

Effect = Literal["refuse", "fails_after_claim"]
Consequence = Literal["cpu_fallback", "session_fails"]


class ProfileError(Exception):
    """A profile could not be found, parsed or validated.

    ``errors`` holds one line per problem, each starting with the JSON path of
    the offending value (``ops[12].versions[0].from: 'x' is not of type 'integer'``).
    """

    def __init__(self, source: str, errors: Iterable[str]) -> None:
        self.source = source
        self.errors: tuple[str, ...] = tuple(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(f"invalid EP profile {source}:\n{lines}" if lines else source)


class UnknownProfileError(ProfileError):
    """No shipped profile answers to the given EP name or alias."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = tuple(known)
        msg = f"unknown execution provider {name!r} (known: {', '.join(self.known)})"
        self.source = name
        self.errors = (msg,)
        Exception.__init__(self, msg)


# ---------------------------------------------------------------------------
# Immutable model of a profile


@dataclass(frozen=True)
class Provenance:
    """Where a group of facts came from (an upstream file, a runtime query, a measurement)."""

    id: str
    kind: str
    repository: str | None = None
    file: str | None = None
    version: str | None = None
    commit: str | None = None
    date: str | None = None
    packages: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    tool: str | None = None
    note: str | None = None

    def describe(self) -> str:
        """One line a reviewer can follow back to the source."""
        parts: list[str] = []
        if self.kind == "measured":
            parts.append("measured with onnxlint probe")
        if self.repository:
            parts.append(self.repository)
        if self.file:
            parts.append(self.file)
        if self.version:
            parts.append(self.version)
        if self.commit:
            parts.append(f"@{self.commit[:10]}")
        if self.packages:
            parts.append(", ".join(f"{k} {v}" for k, v in sorted(self.packages.items())))
        if self.date:
            parts.append(self.date)
        return " ".join(parts) if parts else self.id


@dataclass(frozen=True)
class Constraint:
    """One declarative condition a node must meet (see the schema for the kinds)."""

    kind: str
    reason: str
    effect: Effect = "refuse"
    provenance: str | None = None
    inputs: tuple[int, ...] | None = None
    outputs: tuple[int, ...] | None = None
    value: int | None = None
    name: str | None = None
    allowed: tuple[Any, ...] | None = None
    forbidden: tuple[Any, ...] | None = None
    absent: bool = False
    default: Any = None
    graph_nodes_at_most: int | None = None
    except_ops: frozenset[str] = frozenset()
    skip_constant_inputs: bool = False
    graph_inputs_only: bool = False

    def op_excluded(self, op_type: str) -> bool:
        return op_type in self.except_ops


@dataclass(frozen=True)
class OpRange:
    """Supported operator revisions ``first..last`` (inclusive; ``last`` None = open)."""

    first: int
    last: int | None = None
    types: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    constraints: tuple[Constraint, ...] = ()

    def covers(self, revision: int) -> bool:
        return revision >= self.first and (self.last is None or revision <= self.last)

    def label(self) -> str:
        if self.last is None:
            return f"{self.first}+"
        if self.last == self.first:
            return str(self.first)
        return f"{self.first}-{self.last}"


@dataclass(frozen=True)
class OpSupport:
    """What the EP claims for one (domain, op type)."""

    domain: str
    op: str
    ranges: tuple[OpRange, ...] | None
    types: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    constraints: tuple[Constraint, ...] = ()
    provenance: str = ""
    note: str | None = None
    index: int = 0
    graph_io_types: Mapping[str, frozenset[str]] = field(
        default_factory=dict, hash=False, compare=False
    )  # position in the profile's ``ops`` array, for JSON paths

    def range_for(self, revision: int) -> OpRange | None:
        if self.ranges is None:
            return OpRange(first=1)
        for r in self.ranges:
            if r.covers(revision):
                return r
        return None


@dataclass(frozen=True)
class OpsetLimit:
    min: int | None = None
    max: int | None = None
    reason: str | None = None
    provenance: str | None = None


@dataclass(frozen=True)
class TensorDtypes:
    """Element types accepted on every input/output of every claimed node."""

    allowed: frozenset[str]
    allowed_constant: frozenset[str] | None
    reason: str
    provenance: str | None = None
    forbidden_on_graph_io: frozenset[str] = frozenset()
    fails_on_graph_io: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RankLosingOp:
    """An operator revision whose outputs reach the EP's next subgraph without a rank."""

    op: str
    domain: str
    since_version: int
    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class RefusedQdqUnit:
    """A QDQ node unit the EP refuses whole: target ``op`` whose DQ on each slot of
    ``input_types`` dequantizes one of the listed element types."""

    op: str
    input_types: Mapping[int, frozenset[str]] = field(hash=False, compare=False)
    reason: str = ""
    provenance: str | None = None


@dataclass(frozen=True)
class LayoutPassFailure:
    """A layout-sensitive op the EP claims before ORT's layout transform without validating
    it, and then refuses once rewritten to its layout: session creation fails.

    ``condition`` is ``"zero_sized_output"`` (an output has a dimension of 0) or
    ``"computed_bias_in_qdq_unit"`` (the op is the target of a QDQ unit and input ``slot``
    is computed by a node that is not a DequantizeLinear)."""

    op: str
    condition: str
    reason: str
    slot: int | None = None
    provenance: str | None = None


@dataclass(frozen=True)
class ChainLink:
    """One node of a :class:`FinalizeFailure` chain: its op and, optionally, the value of a
    one-element constant input it must have."""

    op: str
    constant: float | None = None


@dataclass(frozen=True)
class FinalizeFailure:
    """A chain of nodes (each feeding the next) that the EP claims and then fails to
    compile when all of them fall in one of its partitions: session creation fails."""

    chain: tuple[ChainLink, ...]
    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class BoundaryTensorFailure:
    """A tensor of ``dtype`` and ``rank`` entering (``direction`` "input") or leaving
    ("output") one of the EP's partitions, which the EP then fails to compile."""

    dtype: str
    rank: int
    direction: str
    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class RequantizedConstantFailure:
    """A QDQ arrangement the EP claims and then fails to compile: a QuantizeLinear of a float
    constant, quantized to one of ``quantized_types``, whose DequantizeLinear feeds one of
    the ``inputs`` of ``op`` (the schema's ``requantized_constant_failures``)."""

    op: str
    domain: str = "ai.onnx"
    inputs: tuple[int, ...] = ()
    quantized_types: frozenset[str] = frozenset()
    #: "any", "scalar" or "non_scalar": the rank of the quantized constant
    constant: str = "any"
    #: another input must be a DequantizeLinear of a QuantizeLinear of a computed tensor
    activation_input: bool = False
    #: ops that must compute that tensor; empty = any
    activation_producers: frozenset[str] = frozenset()
    #: that op's inputs must all be computed (no constant, no quantized weight)
    activation_producer_computed: bool = False
    #: a node whose every consumer is one of these loads
    except_consumers: frozenset[str] = frozenset()
    reason: str = ""
    provenance: str | None = None


@dataclass(frozen=True)
class Partitioning:
    min_partition_nodes: int = 1
    drop_single_op_partitions: tuple[str, ...] = ()
    drop_if_output_used_outside: tuple[str, ...] = ()
    constant_only_partition_fails: bool = False
    unknown_rank_input_fails: bool = False
    rank_losing_ops: tuple[RankLosingOp, ...] = ()
    cyclic_partition_fails: bool = False
    claimed_body_partition_fails: tuple[str, ...] = ()
    bodies_compiled_with_node: tuple[str, ...] = ()
    #: the last cluster is kept below min_partition_nodes
    keeps_last_small_cluster: bool = False
    refused_qdq_units: tuple[RefusedQdqUnit, ...] = ()
    layout_pass_failures: tuple[LayoutPassFailure, ...] = ()
    finalize_failures: tuple[FinalizeFailure, ...] = ()
    boundary_tensor_failures: tuple[BoundaryTensorFailure, ...] = ()
    #: the EP groups its nodes blind to values If/Loop bodies capture, and ORT refuses its
    #: whole answer for a graph when a group is then not fusable
    grouping_ignores_captured_inputs: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A validated, immutable EP capability profile."""

    id: str
    ep: str
    display_name: str
    variant: Mapping[str, Any] = field(hash=False, compare=False)
    aliases: tuple[str, ...]
    describes: Mapping[str, str] = field(hash=False, compare=False)
    provenance: Mapping[str, Provenance] = field(hash=False, compare=False)
    kind: str
    requires_static_shapes: bool
    requires_static_control_flow: bool
    device_memory: str
    cpu_preferred_shape_nodes: bool
    layout: str
    opsets: Mapping[str, OpsetLimit] = field(hash=False, compare=False)
    unlisted_ops: str
    domains: frozenset[str]
    partitioning: Partitioning
    tensor_dtypes: TensorDtypes | None
    global_constraints: tuple[Constraint, ...]
    notes: tuple[str, ...]
    ops: Mapping[tuple[str, str], OpSupport] = field(hash=False, compare=False)
    source: str = ""
    #: a DequantizeLinear of constants counts as a constant input (quantized weights)
    dequantized_constants: bool = False
    #: cause ("dynamic_shapes", "control_flow") -> "cpu_fallback" | "session_fails"
    refusal_consequence: Mapping[str, Consequence] = field(
        default_factory=dict, hash=False, compare=False
    )
    #: QDQ arrangements claimed and then failing to compile (``requantized_constant_failures``)
    requantized_constant_failures: tuple[RequantizedConstantFailure, ...] = ()

    def refusal_fails(self, cause: str) -> bool:
        """Whether a session fails (rather than falls back to CPU) when this EP refuses nodes
        for ``cause``; a cause the profile does not state falls back, as ORT partitions."""
        return self.refusal_consequence.get(cause, "cpu_fallback") == "session_fails"

    @property
    def label(self) -> str:
        """How messages name the EP: ``QNNExecutionProvider (HTP)``."""
        parts = [str(v) for k, v in self.variant.items() if k in ("device", "format", "backend")]
        return f"{self.ep} ({', '.join(parts)})" if parts else self.ep

    def lookup(self, domain: str, op_type: str) -> OpSupport | None:
        return self.ops.get((_norm_domain(domain), op_type))

    def claims_domain(self, domain: str) -> bool:
        return _norm_domain(domain) in self.domains


def _norm_domain(domain: str) -> str:
    return "ai.onnx" if domain in ("", "ai.onnx") else domain


# ---------------------------------------------------------------------------
# Validation


def json_path(parts: Iterable[str | int]) -> str:
    """``['ops', 12, 'versions', 0, 'from']`` -> ``ops[12].versions[0].from``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(root)"


@cache
def _validator() -> Any:
    import jsonschema  # lazy: only needed when a profile is actually loaded

    schema = json.loads((data_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _leaf_errors(error: Any) -> list[Any]:
    """Descend into if/then, anyOf and allOf wrappers to the errors a user can act on."""
    if error.context:
        out: list[Any] = []
        for sub in error.context:
            out.extend(_leaf_errors(sub))
        return out
    return [error]


def validate_profile_data(data: Any, source: str = "<profile>") -> None:
    """Raise :class:`ProfileError` naming the JSON path of every problem in ``data``."""
    errors: list[tuple[str, str]] = []
    for err in _validator().iter_errors(data):
        for leaf in _leaf_errors(err):
            errors.append((json_path(leaf.absolute_path), leaf.message))
    if not errors and isinstance(data, dict):
        errors.extend(_semantic_errors(data))
    if errors:
        unique = sorted(set(errors), key=lambda e: _path_sort_key(e[0]))
        raise ProfileError(source, [f"{p}: {m}" for p, m in unique])


def _path_sort_key(path: str) -> tuple[Any, ...]:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"[\[\].]+", path) if t)


def _semantic_errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Checks the schema cannot express: references, duplicates, ordered ranges."""
    errors: list[tuple[str, str]] = []
    prov_ids = [p["id"] for p in data.get("provenance", [])]
    for i, pid in enumerate(prov_ids):
        if prov_ids.index(pid) != i:
            errors.append((json_path(["provenance", i, "id"]), f"duplicate provenance id {pid!r}"))
    known = set(prov_ids)

    def check_constraints(items: list[dict[str, Any]], path: list[str | int]) -> None:
        for j, c in enumerate(items):
            ref = c.get("provenance")
            if ref is not None and ref not in known:
                errors.append(
                    (json_path([*path, j, "provenance"]), f"unknown provenance id {ref!r}")
                )
            if c.get("kind") == "attribute" and not (
                "allowed" in c or "forbidden" in c or c.get("absent")
            ):
                errors.append(
                    (
                        json_path([*path, j]),
                        "an attribute constraint needs 'allowed', 'forbidden' or 'absent'",
                    )
                )

    check_constraints(data.get("global_constraints", []), ["global_constraints"])
    for i, r in enumerate(data.get("requantized_constant_failures", [])):
        ref = r.get("provenance")
        if ref is not None and ref not in known:
            path: list[str | int] = ["requantized_constant_failures", i, "provenance"]
            errors.append((json_path(path), f"unknown provenance id {ref!r}"))
    ref = data.get("refusal_consequence", {}).get("provenance")
    if ref is not None and ref not in known:
        errors.append(
            (json_path(["refusal_consequence", "provenance"]), f"unknown provenance id {ref!r}")
        )
    seen: dict[tuple[str, str], int] = {}
    for i, op in enumerate(data.get("ops", [])):
        key = (op["domain"], op["op"])
        if key in seen:
            errors.append(
                (json_path(["ops", i]), f"duplicate entry for {key[0]}.{key[1]} (ops[{seen[key]}])")
            )
        seen.setdefault(key, i)
        if op["provenance"] not in known:
            errors.append(
                (json_path(["ops", i, "provenance"]), f"unknown provenance id {op['provenance']!r}")
            )
        check_constraints(op.get("constraints", []), ["ops", i, "constraints"])
        for k, r in enumerate(op.get("versions", [])):
            if "to" in r and r["to"] < r["from"]:
                errors.append(
                    (
                        json_path(["ops", i, "versions", k, "to"]),
                        f"range ends ({r['to']}) before it starts ({r['from']})",
                    )
                )
            check_constraints(r.get("constraints", []), ["ops", i, "versions", k, "constraints"])
    return errors


# ---------------------------------------------------------------------------
# Building the immutable model


def _constraint(c: Mapping[str, Any]) -> Constraint:
    def idx(key: str) -> tuple[int, ...] | None:
        v = c.get(key)
        return tuple(v) if v is not None else None

    def vals(key: str) -> tuple[Any, ...] | None:
        v = c.get(key)
        return tuple(_freeze(x) for x in v) if v is not None else None

    return Constraint(
        kind=c["kind"],
        reason=c["reason"],
        effect=c.get("effect", "refuse"),
        provenance=c.get("provenance"),
        inputs=idx("inputs"),
        outputs=idx("outputs"),
        value=c.get("value"),
        name=c.get("name"),
        allowed=vals("allowed"),
        forbidden=vals("forbidden"),
        absent=bool(c.get("absent", False)),
        default=_freeze(c.get("default")),
        graph_nodes_at_most=c.get("graph_nodes_at_most"),
        except_ops=frozenset(c.get("except_ops", [])),
        skip_constant_inputs=bool(c.get("skip_constant_inputs", False)),
        graph_inputs_only=bool(c.get("graph_inputs_only", False)),
    )


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _types(t: Mapping[str, list[str]] | None) -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in (t or {}).items()}


def _tensor_dtypes(t: Mapping[str, Any] | None) -> TensorDtypes | None:
    if not t:
        return None
    const = t.get("allowed_constant")
    return TensorDtypes(
        allowed=frozenset(t["allowed"]),
        allowed_constant=frozenset(const) if const is not None else None,
        reason=t["reason"],
        provenance=t.get("provenance"),
        forbidden_on_graph_io=frozenset(t.get("forbidden_on_graph_io", [])),
        fails_on_graph_io=frozenset(t.get("fails_on_graph_io", [])),
    )


#: provenance id of an opset limit that belongs to the ORT release, not to the EP
ORT_MAX_OPSET = "ort-max-opset"


def _opset_limit(ep: str, domain: str, v: Mapping[str, Any]) -> OpsetLimit:
    """A profile's opset limit; the ORT release's limit follows the installed ORT for EPs
    built into it (the profile's number describes the ORT it was generated with)."""
    limit = OpsetLimit(
        min=v.get("min"),
        max=v.get("max"),
        reason=v.get("reason"),
        provenance=v.get("provenance"),
    )
    if limit.provenance != ORT_MAX_OPSET or domain != "ai.onnx":
        return limit
    from onnxlint.ort_versions import runtime_opset_limit

    found = runtime_opset_limit(ep)
    if found is None:
        return limit
    top, version = found
    return OpsetLimit(
        min=limit.min,
        max=top,
        reason=f"onnxruntime {version} (installed) loads ai.onnx up to opset {top}",
        provenance=limit.provenance,
    )


def for_ort(profile: Profile, ort_version: str | None) -> Profile:
    """``profile`` as it applies under ``ort_version`` (e.g. a recorded measurement's ORT):
    its ORT-release opset limit from that release's table row, the rest unchanged."""
    from onnxlint.ort_versions import table_release

    if not ort_version:
        return profile
    top = table_release(ort_version).max_opset
    opsets = {
        d: (
            OpsetLimit(
                min=lim.min,
                max=top,
                reason=f"onnxruntime {ort_version} loads ai.onnx up to opset {top}",
                provenance=lim.provenance,
            )
            if lim.provenance == ORT_MAX_OPSET and d == "ai.onnx"
            else lim
        )
        for d, lim in profile.opsets.items()
    }
    return dataclasses.replace(profile, opsets=opsets)


def build_profile(data: Mapping[str, Any], source: str = "") -> Profile:
    """Turn validated profile JSON into a :class:`Profile` (no validation here)."""
    ops: dict[tuple[str, str], OpSupport] = {}
    for i, o in enumerate(data["ops"]):
        ranges = None
        if "versions" in o:
            ranges = tuple(
                OpRange(
                    first=r["from"],
                    last=r.get("to"),
                    types=_types(r.get("types")),
                    constraints=tuple(_constraint(c) for c in r.get("constraints", [])),
                )
                for r in sorted(o["versions"], key=lambda r: r["from"])
            )
        ops[(o["domain"], o["op"])] = OpSupport(
            domain=o["domain"],
            op=o["op"],
            ranges=ranges,
            types=_types(o.get("types")),
            constraints=tuple(_constraint(c) for c in o.get("constraints", [])),
            provenance=o["provenance"],
            note=o.get("note"),
            index=i,
            graph_io_types=_types(o.get("graph_io_types")),
        )
    domains = frozenset(data.get("domains") or {d for d, _ in ops} or {"ai.onnx"})
    part = data.get("partitioning", {})
    return Profile(
        id=data["id"],
        ep=data["ep"],
        display_name=data.get("display_name", data["ep"]),
        variant=dict(data.get("variant", {})),
        aliases=tuple(data.get("aliases", [])),
        describes=dict(data["describes"]),
        provenance={
            p["id"]: Provenance(
                id=p["id"],
                kind=p["kind"],
                repository=p.get("repository"),
                file=p.get("file"),
                version=p.get("version"),
                commit=p.get("commit"),
                date=p.get("date"),
                packages=dict(p.get("packages", {})),
                tool=p.get("tool"),
                note=p.get("note"),
            )
            for p in data["provenance"]
        },
        kind=data["kind"],
        requires_static_shapes=bool(data.get("requires_static_shapes", False)),
        requires_static_control_flow=bool(data.get("requires_static_control_flow", False)),
        refusal_consequence={
            k: v for k, v in data.get("refusal_consequence", {}).items() if k != "provenance"
        },
        device_memory=data.get("device_memory", "host"),
        cpu_preferred_shape_nodes=bool(data.get("cpu_preferred_shape_nodes", False)),
        dequantized_constants=bool(data.get("dequantized_constants", False)),
        requantized_constant_failures=tuple(
            RequantizedConstantFailure(
                op=r["op"],
                domain=r.get("domain", "ai.onnx"),
                inputs=tuple(r["inputs"]),
                quantized_types=frozenset(r["quantized_types"]),
                constant=r.get("constant", "any"),
                activation_input=bool(r.get("activation_input", False)),
                activation_producers=frozenset(r.get("activation_producers", [])),
                activation_producer_computed=bool(r.get("activation_producer_computed", False)),
                except_consumers=frozenset(r.get("except_consumers", [])),
                reason=r["reason"],
                provenance=r.get("provenance"),
            )
            for r in data.get("requantized_constant_failures", [])
        ),
        layout=data.get("layout", "NCHW"),
        opsets={d: _opset_limit(data["ep"], d, v) for d, v in data.get("opsets", {}).items()},
        unlisted_ops=data.get("unlisted_ops", "refuse"),
        domains=domains,
        partitioning=Partitioning(
            min_partition_nodes=part.get("min_partition_nodes", 1),
            drop_single_op_partitions=tuple(part.get("drop_single_op_partitions", [])),
            drop_if_output_used_outside=tuple(part.get("drop_if_output_used_outside", [])),
            constant_only_partition_fails=bool(part.get("constant_only_partition_fails", False)),
            unknown_rank_input_fails=bool(part.get("unknown_rank_input_fails", False)),
            rank_losing_ops=tuple(
                RankLosingOp(
                    op=r["op"],
                    domain=r.get("domain", "ai.onnx"),
                    since_version=int(r["since_version"]),
                    reason=r["reason"],
                    provenance=r.get("provenance"),
                )
                for r in part.get("rank_losing_ops", [])
            ),
            cyclic_partition_fails=bool(part.get("cyclic_partition_fails", False)),
            claimed_body_partition_fails=tuple(part.get("claimed_body_partition_fails", [])),
            bodies_compiled_with_node=tuple(part.get("bodies_compiled_with_node", [])),
            keeps_last_small_cluster=bool(part.get("keeps_last_small_cluster", False)),
            refused_qdq_units=tuple(
                RefusedQdqUnit(
                    op=u["op"],
                    input_types={int(k): frozenset(v) for k, v in u["input_types"].items()},
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                )
                for u in part.get("refused_qdq_units", [])
            ),
            layout_pass_failures=tuple(
                LayoutPassFailure(
                    op=u["op"],
                    condition=u["condition"],
                    reason=u["reason"],
                    slot=u.get("slot"),
                    provenance=u.get("provenance"),
                )
                for u in part.get("layout_pass_failures", [])
            ),
            finalize_failures=tuple(
                FinalizeFailure(
                    chain=tuple(
                        ChainLink(op=c["op"], constant=c.get("constant")) for c in u["chain"]
                    ),
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                )
                for u in part.get("finalize_failures", [])
            ),
            grouping_ignores_captured_inputs=bool(
                part.get("grouping_ignores_captured_inputs", False)
            ),
            boundary_tensor_failures=tuple(
                BoundaryTensorFailure(
                    dtype=u["dtype"],
                    rank=int(u["rank"]),
                    direction=u["direction"],
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                )
                for u in part.get("boundary_tensor_failures", [])
            ),
            notes=tuple(part.get("notes", [])),
        ),
        tensor_dtypes=_tensor_dtypes(data.get("tensor_dtypes")),
        global_constraints=tuple(_constraint(c) for c in data.get("global_constraints", [])),
        notes=tuple(data.get("notes", [])),
        ops=ops,
        source=source,
    )


# ---------------------------------------------------------------------------
# Shipped profiles: index, alias resolution, cache


@dataclass(frozen=True)
class ProfileInfo:
    """One row of ``rules/eps/index.json``: enough to resolve a name without loading."""

    id: str
    ep: str
    file: str
    aliases: tuple[str, ...]
    default_for_ep: bool
    variant: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    describes: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)


_lock = threading.Lock()
_cache: dict[str, Profile] = {}


@cache
def list_profiles() -> tuple[ProfileInfo, ...]:
    """Every shipped profile, from the index (no profile file is parsed)."""
    path = data_dir() / EPS_DIR / INDEX_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["profiles"]
    except (OSError, ValueError, KeyError) as exc:
        raise ProfileError(str(path), [f"(root): cannot read the profile index: {exc}"]) from exc
    return tuple(
        ProfileInfo(
            id=r["id"],
            ep=r["ep"],
            file=r["file"],
            aliases=tuple(r.get("aliases", [])),
            default_for_ep=bool(r.get("default_for_ep", False)),
            variant=dict(r.get("variant", {})),
            describes=dict(r.get("describes", {})),
        )
        for r in rows
    )


def _short_ep(ep: str) -> str:
    return ep[: -len("ExecutionProvider")] if ep.endswith("ExecutionProvider") else ep


@cache
def _alias_table() -> dict[str, str]:
    """Lower-cased name -> profile id. Profile ids and explicit aliases win over EP names."""
    table: dict[str, str] = {}
    infos = list_profiles()
    # EP names (full and without the suffix) point at the EP's default variant.
    for info in sorted(infos, key=lambda i: not i.default_for_ep):
        for name in (info.ep, _short_ep(info.ep)):
            table.setdefault(name.lower(), info.id)
    for info in infos:
        for name in info.aliases:
            table[name.lower()] = info.id
        table[info.id.lower()] = info.id
    return table


def resolve(name: str) -> str:
    """Map an EP name or alias (``qnn``, ``trt``, ``QNNExecutionProvider``) to a profile id."""
    key = name.strip().lower()
    table = _alias_table()
    if key in table:
        return table[key]
    raise UnknownProfileError(name, sorted({i.id for i in list_profiles()}))


def _load_file(path: Path, source: str, validate: bool = True) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(source, [f"(root): cannot read file: {exc.strerror or exc}"]) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(
            source, [f"(root): not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"]
        ) from exc
    if validate:
        validate_profile_data(data, source)
    return build_profile(data, source)


def load_profile(name: str) -> Profile:
    """Load a shipped profile by id, alias or ORT EP name (cached per process)."""
    pid = resolve(name)
    with _lock:
        hit = _cache.get(pid)
    if hit is not None:
        return hit
    info = next(i for i in list_profiles() if i.id == pid)
    # shipped profiles are validated by the test suite (tests/test_profiles.py); validating
    # them again here cost about 0.5 s per profile on every lint (docs/performance.md)
    profile = _load_file(data_dir() / EPS_DIR / info.file, f"{EPS_DIR}/{info.file}", validate=False)
    with _lock:
        return _cache.setdefault(pid, profile)


def load_profile_file(path: str | Path) -> Profile:
    """Load and validate a user profile (``--ep-profile my_npu.json``), cached by resolved path."""
    p = Path(path).expanduser()
    key = f"file:{p.resolve()}"
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    profile = _load_file(p, str(path))
    with _lock:
        return _cache.setdefault(key, profile)


def get_profile(name_or_path: str | Path) -> Profile:
    """``--ep`` value or ``--ep-profile`` path: a path if it looks like one, else an EP name."""
    s = str(name_or_path)
    # A bare word is always an EP name, even if a file of that name happens to exist.
    if isinstance(name_or_path, Path) or s.lower().endswith(".json") or "/" in s or "\\" in s:
        return load_profile_file(s)
    return load_profile(s)


def all_profiles() -> list[Profile]:
    """Load every shipped profile (for `onnxlint eps` and the tests; not used at start-up)."""
    return [load_profile(i.id) for i in list_profiles()]


def clear_cache() -> None:
    """Forget loaded profiles (tests that rewrite a user profile between loads)."""
    with _lock:
        _cache.clear()

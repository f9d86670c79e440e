"""Root causes: findings that share one cause, reported once at the cause.

A refusal rule marks each finding with its :class:`~onnxlint.diagnostics.Cause` (the
dynamic dims, the op the EP lacks, ...). :func:`group` turns a report's findings into
:class:`CauseGroup` objects, plain data that every front end renders: the CLI's table
(one row per cause, ``--show-nodes`` for every node), JSON (``causes``), SARIF (one result
with ``relatedLocations``) and the language server (``relatedInformation``). Grouping is a
pure function of the findings, so it runs after baselines and ``--confirm`` have had
their say. Groups are ranked by how many nodes they cost.

The what-if of a cause (``WhatIf``: the predicted outcome once its remedy is applied) is
computed by the engine (:mod:`onnxlint.what_if`), stored on the report, and joined here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnxlint.diagnostics import Cause, Diagnostic, Fix, Location, Severity

if TYPE_CHECKING:  # the report asks for its causes (Report.causes): no import at run time
    from onnxlint.report import Report

#: fewer findings than this sharing a cause are shown as they are
MIN_MEMBERS = 2
#: node names a cause's message quotes (the rest are counted)
NAMED_NODES = 3

#: what a refused node's EP constraint asks, by the constraint's kind (``Cause.subject[1]``
#: of a ``constraint`` cause; the kinds of ``onnxlint.analyses.constraints``): the cause's
#: title says it in words, the JSON keeps the kind
CONSTRAINT_WORDS = {
    "always": "a case it does not take",
    "attribute": "an attribute value it does not take",
    "channel_vector": "a per-channel input whose shape it does not take",
    "constant_input": "an input it needs constant is computed",
    "einsum_equation": "an Einsum equation it does not take",
    "index_room": "constant indices out of range",
    "finite_scale": "a quantization scale that is infinite or NaN",
    "whole_dequantized_scales": "quantized Resize scales giving a batch or channel axis a fractional size",
    "input_absent": "an optional input it does not take",
    "known_shape": "a shape it cannot know",
    "max_rank": "a tensor rank above its limit",
    "min_inputs": "fewer inputs than it needs",
    "min_rank": "a tensor rank below its minimum",
    "multiple_of": "a dimension that is not a multiple it needs",
    "no_zero_dims": "a zero-sized dimension",
    "not_graph_input": "an input read straight from a graph input",
    "not_graph_output": "an output that is a graph output",
    "output_absent": "an optional output it does not produce",
    "pad_room": "pads that reach past the input",
    "static_shape": "a shape that is not static (a dynamic or unknown dimension)",
}


@dataclass
class WhatIf:
    """The predicted outcome of a remedy: ``dims`` pinned (``onnxlint fix-shapes``), for one EP."""

    ep: str
    dims: dict[str, int]
    command: str
    #: (nodes on the EP, nodes in all, partitions of the EP) before and after
    before: tuple[int, int, int]
    after: tuple[int, int, int]
    #: what still keeps nodes off the EP afterwards: (cause text, nodes)
    remaining: list[tuple[str, int]] = field(default_factory=list)
    #: a remedy that could not be predicted says why
    error: str | None = None

    def describe(self) -> str:
        pins = ", ".join(f"{k}={v}" for k, v in self.dims.items())
        head = f"what if: pinning {pins} (`{self.command}`)"
        if self.error:
            return f"{head}: not predicted ({self.error})"
        (b_on, b_all, b_parts), (a_on, a_all, a_parts) = self.before, self.after
        text = (
            f"{head} -> {self.ep} {a_on}/{a_all} nodes in {a_parts} "
            f"partition{'s' if a_parts != 1 else ''} (now {b_on}/{b_all} in {b_parts})"
        )
        if self.remaining:
            # each cause's text states its own node count (the JSON carries it as a field)
            text += f"; still off {self.ep}: " + "; ".join(what for what, _ in self.remaining)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "ep": self.ep,
            "dims": dict(self.dims),
            "command": self.command,
            "before": {
                "nodes_on_ep": self.before[0],
                "nodes": self.before[1],
                "partitions": self.before[2],
            },
            "after": {
                "nodes_on_ep": self.after[0],
                "nodes": self.after[1],
                "partitions": self.after[2],
            },
            "remaining": [{"cause": what, "nodes": n} for what, n in self.remaining],
            "error": self.error,
        }


@dataclass
class CauseGroup:
    """One cause, the findings it explains, and what fixing it would give."""

    ep: str | None
    cause: Cause
    members: list[Diagnostic]
    what_if: WhatIf | None = None
    #: the named dims the model's graph inputs declare (``Report.dim_params``): the ones a
    #: dynamic-dims title names; dims named inside the graph are counted
    declared: frozenset[str] = frozenset()

    @property
    def head(self) -> Diagnostic:
        """The member that speaks for the group: the most serious, then the cause itself."""
        return max(self.members, key=lambda d: (d.severity, d.location.node_index is None))

    @property
    def severity(self) -> Severity:
        return max(d.severity for d in self.members)

    @property
    def code(self) -> str:
        return self.head.code

    @property
    def nodes(self) -> list[Location]:
        seen: dict[str, Location] = {}
        for d in self.members:
            path = d.location.node_path
            if path is not None:
                seen.setdefault(path, d.location)
        return list(seen.values())

    @property
    def where(self) -> Location:
        """Where the cause sits: the graph input declaring the dims, else its first node."""
        if self.cause.where:
            return self.cause.where[0]
        nodes = self.nodes
        return nodes[0] if nodes else self.head.location

    def title(self) -> str:
        """What the cause is and what it costs, without the per-node detail."""
        n = len(self.nodes)
        cost = f"{n} node{'s' if n != 1 else ''}"
        fall, have = ("fall", "have") if n != 1 else ("falls", "has")
        ep = self.ep or "the EP"
        kind, subject = self.cause.kind, self.cause.subject
        if kind == "dynamic-dims":
            inputs = sorted({w.tensor for w in self.cause.where if w.tensor})
            of = f" (inputs {', '.join(inputs)})" if inputs else ""
            text = (
                f"dynamic dims {_dims_text(subject, self.declared)}{of}: {ep} needs static shapes"
            )
            return text + (f" and refuses {cost}" if n else "")
        if kind == "unknown-shape":
            return f"shapes are unknown from {subject[0]} on: {ep} needs static shapes" + (
                f" and refuses {cost}" if n else ""
            )
        if kind == "data-dependent":
            return f"{cost} {have} shapes computed at run time: {ep} needs static shapes"
        if kind == "folded-shape":
            return (
                f"shapes are computed at run time from values known at export time, from "
                f"{subject[0]} on; ORT folds them only with its optimizations on: {ep} needs "
                f"static shapes and, with them off, refuses {cost}"
            )
        if kind == "op":
            return f"{ep} has no implementation of {subject[0]}: {cost} {fall} back"
        if kind == "revision":
            return f"{ep} does not implement {subject[0]} revision {subject[1]}: {cost} {fall} back"
        if kind == "dtype":
            return f"{ep} does not support the element types of {cost} ({subject[0]})"
        if kind == "domain":
            return f"{ep} does not claim the custom domain {subject[0]}: {cost} {fall} back"
        if len(subject) > 1:
            return f"{ep} refuses {cost} ({subject[0]}): {CONSTRAINT_WORDS.get(subject[1], subject[1])}"
        return f"{ep} refuses {cost} ({subject[0]})"

    def fix(self) -> Fix | None:
        """The remedy of the cause: the head finding's, unless the cause names its own."""
        if self.cause.kind == "folded-shape":
            return Fix(
                title=f"fold the values that set {self.cause.subject[0]}'s shape before "
                "deployment (onnxscript.optimizer.optimize(model)), or keep ORT's graph "
                "optimizations at the basic level or above (the default)"
            )
        if self.cause.kind == "unknown-shape":
            return Fix(
                title=f"make the output shapes of {self.cause.subject[0]} known (its own "
                "finding says why they are lost; declaring them in value_info also works)"
            )
        return self.head.fix

    def message(self) -> str:
        nodes = self.nodes
        text = self.title()
        if nodes:
            names = ", ".join(loc.node_name or loc.node_path or "" for loc in nodes[:NAMED_NODES])
            more = f" and {len(nodes) - NAMED_NODES} more" if len(nodes) > NAMED_NODES else ""
            text += f"; nodes: {names}{more}"
        return text

    def key(self) -> tuple[Any, ...]:
        return _key(self.head)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ep": self.ep,
            "cause": self.cause.to_dict(),
            "code": self.code,
            "severity": self.severity.label,
            "message": self.message(),
            "nodes": len(self.nodes),
            "node_paths": [loc.node_path for loc in self.nodes],
            "findings": len(self.members),
            "what_if": self.what_if.to_dict() if self.what_if else None,
        }


def _key(d: Diagnostic) -> tuple[Any, ...]:
    assert d.cause is not None
    if d.cause.kind == "dynamic-dims":
        return (d.path, d.ep, d.cause.kind)  # one remedy pins them all: one cause per EP
    return (d.path, d.ep, d.cause.kind, d.cause.subject)


def dynamic_dims_causes(
    diagnostics: Iterable[Diagnostic], min_members: int = MIN_MEMBERS
) -> dict[str, set[str]]:
    """EP -> the dims of its dynamic-dims cause, for the causes :func:`group` reports (at
    least ``min_members`` findings): the ones a what-if prediction is shown with. An EP
    whose only such finding is its graph input's (an earlier EP took the nodes) has none."""
    members: dict[tuple[Any, ...], list[Diagnostic]] = {}
    for d in diagnostics:
        if d.cause is not None and d.cause.kind == "dynamic-dims" and d.ep is not None:
            members.setdefault(_key(d), []).append(d)
    out: dict[str, set[str]] = {}
    for found in members.values():
        if len(found) >= min_members:
            ep = found[0].ep
            assert ep is not None
            out.setdefault(ep, set()).update(s for d in found if d.cause for s in d.cause.subject)
    return out


def group(report: Report, min_members: int = MIN_MEMBERS) -> list[CauseGroup]:
    """The causes shared by at least ``min_members`` findings, most nodes first."""
    by_key: dict[tuple[Any, ...], list[Diagnostic]] = {}
    for d in report.diagnostics:
        if d.cause is not None and d.ep is not None:
            by_key.setdefault(_key(d), []).append(d)
    groups = []
    for members in by_key.values():
        if len(members) < min_members:
            continue
        groups.append(
            CauseGroup(members[0].ep, _merged(members), members, declared=report.dim_params)
        )
    what_ifs = {(w.ep, tuple(sorted(w.dims))): w for w in report.what_ifs}
    for g in groups:
        if g.cause.kind == "dynamic-dims":
            g.what_if = what_ifs.get((g.ep, tuple(sorted(g.cause.subject))))
            if g.what_if is None:  # the what-if pinned every input dim: a superset is fine
                g.what_if = next((w for (ep, _), w in what_ifs.items() if ep == g.ep), None)
    groups.sort(key=lambda g: (-len(g.nodes), -g.severity, g.code))
    return groups


#: at most this many dims named inside the graph are listed in a title
NAMED_INSIDE_SHOWN = 3


def _dims_text(dims: Sequence[str], declared: frozenset[str]) -> str:
    """``batch, seq``; ``batch and 14 dims named inside the graph``: the input dims by
    name, the others (ORT's symbolic inference writes them as expressions of other dims,
    ``floor(Pad_12_o0__d1/4)``, which nobody can pin) counted once there are more than a few."""
    inputs = [d for d in dims if d in declared]
    inside = [d for d in dims if d not in declared]
    if len(inside) <= NAMED_INSIDE_SHOWN:
        return ", ".join(dims)
    named = ", ".join(inputs or inside[:NAMED_INSIDE_SHOWN])
    rest = len(inside) if inputs else len(inside) - NAMED_INSIDE_SHOWN
    return f"{named} and {rest} {'dims' if rest != 1 else 'dim'} named inside the graph"


def _merged(members: Sequence[Diagnostic]) -> Cause:
    first = members[0].cause
    assert first is not None
    if first.kind != "dynamic-dims":
        return first
    dims: dict[str, None] = {}
    where: dict[tuple[Any, ...], Location] = {}
    for d in members:
        assert d.cause is not None
        dims.update(dict.fromkeys(d.cause.subject))
        for w in d.cause.where:
            where.setdefault((w.graph, w.tensor), w)
    return Cause("dynamic-dims", tuple(sorted(dims)), tuple(where.values()))


def ungrouped(report: Report, groups: Iterable[CauseGroup]) -> list[Diagnostic]:
    """The findings no group speaks for, in report order."""
    grouped = {id(d) for g in groups for d in g.members}
    return [d for d in report.diagnostics if id(d) not in grouped]


@dataclass(frozen=True)
class Shown:
    """One line of a report as the front ends show it: a root cause standing for its
    findings, or a finding of its own. Renderers (table, concise, GitHub, SARIF) read these
    and never group anything themselves."""

    code: str
    rule: str
    category: str
    severity: Severity
    location: Location
    ep: str | None
    message: str
    fix: Fix | None
    related: tuple[Location, ...]
    #: the baseline key of the finding, or of the cause's head finding plus ``#cause``
    fingerprint: str
    path: str | None
    group: CauseGroup | None = None
    diagnostic: Diagnostic | None = None

    def where(self) -> str:
        return self.location.describe()


def shown(
    report: Report, min_severity: Severity = Severity.HINT, show_nodes: bool = False
) -> list[Shown]:
    """What a front end lists for ``report``: the causes (unless ``show_nodes``), then the
    findings no cause speaks for, all at or above ``min_severity``."""
    out: list[Shown] = []
    singles = report.diagnostics
    if not show_nodes:
        groups = [g for g in group(report) if g.severity >= min_severity]
        singles = ungrouped(report, groups)
        for g in groups:
            head = g.head
            text = g.message()
            if g.what_if is not None:
                text += f"\n{g.what_if.describe()}"
            out.append(
                Shown(
                    code=g.code,
                    rule=head.rule,
                    category=head.category.value,
                    severity=g.severity,
                    location=g.where,
                    ep=g.ep,
                    message=text,
                    fix=None if g.what_if is not None else g.fix(),
                    related=tuple(g.nodes),
                    fingerprint=head.fingerprint() + "#cause",
                    path=head.path or report.path,
                    group=g,
                )
            )
    for d in singles:
        if d.severity < min_severity:
            continue
        note = f"\n{d.disproved_text()}" if d.disproved else ""
        out.append(
            Shown(
                code=d.code,
                rule=d.rule,
                category=d.category.value,
                severity=d.severity,
                location=d.location,
                ep=d.ep,
                message=d.message + note,
                fix=d.fix,
                related=d.related,
                fingerprint=d.fingerprint(),
                path=d.path or report.path,
                diagnostic=d,
            )
        )
    return out

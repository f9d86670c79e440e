"""The prediction against a real session: node for node, for one EP at one level.

ORT's reported assignment is mapped onto the model's node paths (after normalising
its renames), the EP's refusal reasons onto the nodes they name, and both are set
against what the partition analysis predicts for ``[EP, CPU]`` at the matching graph
level (``disabled`` sessions against the exported graph, ``default`` against level 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnxlint.ep_names import CPU_EP
from onnxlint.runtime.results import AssignedNode, SessionResult

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex, NodeRef
    from onnxlint.profiles import Profile


#: prediction graph level for each session level
PREDICTION_LEVEL = {"disabled": "exported", "default": "optimized"}


def reported_to_paths(
    index: ModelIndex,
    reported: list[AssignedNode],
    unnamed: frozenset[str] = frozenset(),
    original: ModelIndex | None = None,
) -> tuple[dict[str, str], list[AssignedNode], list[str]]:
    """(node path -> EP, inserted nodes, unreported node paths) for one graph level.

    ``unnamed``: paths of nodes ORT reports without a name although the prediction names
    them (the body of a function op ORT inlines, ``LevelGraph.inlined_late``).
    ``original``: the model's own index when ``index`` is ORT's level-1 graph of it. A
    session asked with ``name_unnamed`` lists the model's unnamed nodes in the model's
    order (``runtime.session_names``), and ORT wrote its level-1 graph in an order of its
    own: the unnamed nodes of ``index`` are paired in the order of the original nodes
    they are (the unnamed original node that writes the same first output)."""
    from onnxlint.runtime.normalise import SourceNode, match_assignment

    nodes = [n for n in index.nodes if not n.graph.is_function]
    srcs = [
        SourceNode(
            i,
            "" if n.path in unnamed else n.name,
            n.op_type,
            "" if n.domain == "ai.onnx" else n.domain,
        )
        for i, n in enumerate(nodes)
    ]
    if original is not None and original is not index:
        position = _original_positions(nodes, original)
        # named nodes pair by name wherever they stand; unnamed ones by op type in order
        srcs.sort(key=lambda s: (bool(s.name) or s.index not in position, position.get(s.index, 0)))
    m = match_assignment(srcs, reported)
    actual = {nodes[i].path: ep for i, ep in m.ep_by_index.items()}
    unreported = [nodes[i].path for i in m.unreported]
    return actual, list(m.inserted), unreported


def _original_positions(nodes: list[NodeRef], original: ModelIndex) -> dict[int, int]:
    """Position in ``nodes`` of each unnamed main-graph node -> the position of the unnamed
    original main-graph node that writes the same first output."""
    writes = {
        n.outputs[0]: n.index
        for n in original.nodes
        if n.graph.parent is None and not n.graph.is_function and not n.name and n.outputs
    }
    return {
        i: writes[n.outputs[0]]
        for i, n in enumerate(nodes)
        if n.graph.parent is None and not n.name and n.outputs and n.outputs[0] in writes
    }


def reasons_by_path(index: ModelIndex, result: SessionResult) -> dict[str, list[str]]:
    """Node path -> the EP's reasons for refusing it (QNN's verbose validation log)."""
    from onnxlint.runtime.normalise import strip_token

    by_name: dict[tuple[str, str], str] = {}
    by_op: dict[str, list[str]] = {}
    for n in index.nodes:
        if n.graph.is_function:
            continue
        if n.name:
            by_name.setdefault((n.name, n.op_type), n.path)
        by_op.setdefault(n.op_type, []).append(n.path)
    out: dict[str, list[str]] = {}
    unnamed: dict[str, list[str]] = {}
    for (op, name), reasons in result.refusal_reasons().items():
        path = by_name.get((strip_token(name), op)) if name else None
        if path is not None:
            out.setdefault(path, []).extend(r for r in reasons if r not in out.get(path, []))
        elif not name:
            unnamed.setdefault(op, []).extend(reasons)
    # unnamed nodes: only when every refusal of that op gives the same reason
    for op, reasons in unnamed.items():
        if len(set(reasons)) == 1:
            for path in by_op.get(op, []):
                out.setdefault(path, [reasons[0]])
    return out


@dataclass
class LevelDiff:
    """Prediction against reality for one EP at one session level."""

    ep: str
    level: str
    result: SessionResult
    cached: bool = False
    predicted: dict[str, str] = field(default_factory=dict)
    actual: dict[str, str] = field(default_factory=dict)
    inserted: list[AssignedNode] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    predicted_partitions: dict[str, int] = field(default_factory=dict)
    prediction_note: str | None = None
    prediction: Prediction | None = field(default=None, repr=False)

    @property
    def compared(self) -> list[str]:
        return [p for p in self.predicted if p in self.actual]

    @property
    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((self.predicted[p], self.actual[p]) for p in self.compared)

    @property
    def mismatches(self) -> list[str]:
        return [p for p in self.compared if self.predicted[p] != self.actual[p]]

    @property
    def agreement(self) -> float | None:
        n = len(self.compared)
        return None if n == 0 else 1.0 - len(self.mismatches) / n

    @property
    def only_predicted(self) -> list[str]:
        """Predicted nodes ORT did not report at this level (folded, fused, constants)."""
        return [p for p in self.predicted if p not in self.actual]

    def actual_partitions(self) -> dict[str, int]:
        """Accelerator partitions ORT made (its CPU "subgraphs" are not partitions)."""
        subgraphs = self.result.facts.get("ep_subgraphs")
        if isinstance(subgraphs, list):
            return dict(
                Counter(
                    str(s.get("ep"))
                    for s in subgraphs
                    if isinstance(s, dict) and s.get("ep") != CPU_EP
                )
            )
        return {}

    def actual_counts(self) -> dict[str, int]:
        return dict(Counter(n.ep for n in self.result.assignment))

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "ep": self.ep,
            "level": self.level,
            "status": r.status,
            "error": r.error,
            "cached": self.cached,
            "create_s": r.create_s,
            "assignment_source": r.assignment_source,
            "versions": {k: v for k, v in r.versions.items() if k != "executable"},
            "predicted_nodes": dict(Counter(self.predicted.values())),
            "actual_nodes": self.actual_counts(),
            "predicted_partitions": self.predicted_partitions,
            "actual_partitions": self.actual_partitions(),
            "compared": len(self.compared),
            "agree": len(self.compared) - len(self.mismatches),
            "agreement": self.agreement,
            "confusion": {f"{a}->{b}": n for (a, b), n in sorted(self.confusion.items())},
            "mismatches": {p: [self.predicted[p], self.actual[p]] for p in self.mismatches},
            "only_predicted": len(self.only_predicted),
            "inserted": dict(Counter(n.op_type for n in self.inserted)),
            "fallback": self.result.fallback.message or None,
            "prediction_note": self.prediction_note,
        }


@dataclass
class Prediction:
    """What the partition analysis predicts for one EP at one graph level."""

    node_ep: dict[str, str]
    partitions: dict[str, int]
    index: ModelIndex
    verdicts: dict[str, Any] = field(default_factory=dict)  # path -> Verdict of the EP
    note: str | None = None
    #: nodes of function ops ORT inlines, which it reports unnamed
    inlined: frozenset[str] = frozenset()


def predict(ctx: LintContext, profile: Profile, level: str) -> Prediction | None:
    """The prediction for ``[profile, CPU]`` at ``level`` (``exported`` or ``optimized``)."""
    try:
        from onnxlint.analyses.assignment import Assignment, assign_level
        from onnxlint.analyses.partition import plan_level
    except ImportError:  # pragma: no cover - the partition analysis ships with onnxlint
        return None
    shared = ctx.analysis(Assignment)
    la_shared = shared.level(level)
    if la_shared is None:
        return None
    la = assign_level(la_shared.graph, [profile])
    plan = plan_level(la, ctx.config.assume_dims)
    verdicts = {}
    for na in la:
        v = na.verdict_for(profile.ep)
        if v is not None:
            verdicts[na.node.path] = v
    return Prediction(
        node_ep=dict(plan.node_ep),
        partitions=dict(Counter(p.ep for p in plan.partitions)),
        index=la_shared.graph.index,
        verdicts=verdicts,
        note=plan.note,
        inlined=la_shared.graph.inlined_late,
    )


@dataclass
class EpConfirmation:
    ep: str  # provider name
    profile_id: str
    runner: str
    levels: list[LevelDiff] = field(default_factory=list)
    discarded: str | None = None
    skipped: str | None = None  # why no session was created (cache-only miss, unsafe model)


def diff_level(
    ctx: LintContext, profile: Profile, level: str, res: SessionResult, cached: bool
) -> LevelDiff:
    pred = predict(ctx, profile, PREDICTION_LEVEL.get(level, "exported"))
    index = pred.index if pred is not None else ctx.index
    diff = LevelDiff(ep=profile.ep, level=level, result=res, cached=cached)
    if pred is not None:
        diff.predicted = pred.node_ep
        diff.predicted_partitions = {k: v for k, v in pred.partitions.items() if k != CPU_EP}
        diff.prediction_note = pred.note
    else:
        diff.prediction_note = "no prediction for this graph level (ORT could not produce it)"
    if res.ok and res.assignment:
        inlined = pred.inlined if pred is not None else frozenset()
        diff.actual, diff.inserted, diff.unreported = reported_to_paths(
            index, res.assignment, inlined, ctx.index
        )
    diff.reasons = reasons_by_path(index, res)
    diff.prediction = pred
    return diff

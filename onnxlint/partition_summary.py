"""The partition-summary stage: after the rules, the partition plans (both graph levels)
and the node -> EP map go onto the report (``Report.partitions``, ``Report.assignment``),
and a level-1 graph that could not be built is reported (OL605).

A stage of the engine (``engine.stages()``), above the rules: it reads the partition
analysis the rules already computed and never raises.
"""

from __future__ import annotations

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.partition import Partitions
from onnxlint.context import LintContext
from onnxlint.diagnostics import Location
from onnxlint.ep_names import CPU_EP
from onnxlint.report import Report
from onnxlint.rules.partition import Level1GraphUnavailable, OrtRejectsGraph


def fill_report(ctx: LintContext, report: Report) -> None:
    """Attach the partition plans and the node -> EP map to ``report``."""
    if not ctx.eps:
        return
    if all(p.ep == CPU_EP for p in ctx.eps):
        _report_cpu_refusal(ctx, report)
        return
    try:
        parts = ctx.analysis(Partitions)
        report.partitions = list(parts.plans())
        _report_level1_failure(ctx, parts.assignment)
        plan = parts.deployment
        assert plan.graph is not None
        assignment: dict[str, str] = {}
        for path, ep in plan.node_ep.items():
            src = plan.graph.source_path.get(path)
            if src is not None:
                assignment[src] = ep
        report.assignment = assignment
        report.stats["partition_level"] = plan.level
    except Exception as exc:  # a stage must never break a lint; the rules report analysis crashes
        report.stats["partition_error"] = f"{type(exc).__name__}: {exc}"


def _report_cpu_refusal(ctx: LintContext, report: Report) -> None:
    """A lint for the CPU alone predicts no partition, but ORT refusing its own level-1
    graph fails the CPU's default session too (OL606): the level-1 outcome is read for that
    alone, without an assignment."""
    from onnxlint.analyses import level1

    if not level1.needed(ctx.config, ctx.eps):
        return
    try:
        assignment = ctx.analysis(Assignment)
        assignment.level1_outcome()
        _report_level1_failure(ctx, assignment)
    except Exception as exc:  # a stage must never break a lint
        report.stats["partition_error"] = f"{type(exc).__name__}: {exc}"


def _report_level1_failure(ctx: LintContext, assignment: Assignment) -> None:
    refusal = assignment.optimized_refusal
    if refusal is not None:
        which = "every_level" if refusal.every_level else "default"
        ctx.emit(OrtRejectsGraph.make(Location(), which, error=_without_paths(refusal.error)))
    failure = assignment.optimized_failure
    if failure is None:
        return
    ctx.emit(
        Level1GraphUnavailable.make(
            Location(), failure.status, seconds=failure.timeout_s, detail=failure.detail
        )
    )


def _without_paths(error: str) -> str:
    """ORT's error without the worker's copy of the model ("Load model from <tmp> failed:")."""
    head, sep, rest = error.partition(" failed:")
    return rest.strip() if sep and "Load model from " in head else error

"""``--report partitions``: the predicted partitions as a table, and the one-line verdict per EP.

Reads ``Report.partitions`` (one :class:`~onnxlint.analyses.partition_plan.PartitionPlan`
per graph level) and never recomputes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnxlint.diagnostics import Diagnostic
from onnxlint.ep_names import provider_for, short_ep
from onnxlint.load_failures import failure_for, load_failures
from onnxlint.report import Report

_WIDTHS: list[int | None] = [None, None, 24, None, 28, 28, 30, 30, 28, 50]
LEVEL_TITLES = {
    "exported": "graph as exported (optimizations disabled)",
    "optimized": "graph after ORT level-1 optimizations (default session)",
}


def _names(names: Sequence[str], limit: int = 3) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" (+{len(names) - limit})"


def _label(path: str) -> str:
    """``main/loop:body/Add_3`` -> ``loop:body/Add_3``: the main graph is implied."""
    return path[len("main/") :] if path.startswith("main/") else path


def verdict_lines(report: Report) -> list[str]:
    """``[level-1] QNN: 3 partitions, 97% of nodes, ...`` for every plan and accelerator."""
    out = []
    failures = load_failures(report.diagnostics)
    for plan in report.partitions:
        if not hasattr(plan, "verdict_line"):
            continue
        tag = "level-1" if plan.level == "optimized" else "exported"
        out += [f"[{tag}] {ep_verdict(plan, ep, report, failures)}" for ep in plan.accelerators]
    return out


def ep_verdict(
    plan: Any, ep: str, report: Report, failures: dict[str, Diagnostic] | None = None
) -> str:
    """``plan``'s verdict line for the accelerator ``ep`` (a provider name), or, when a
    finding of ``report`` says that its session fails at load, that it loads nothing."""
    if failures is None:
        failures = load_failures(report.diagnostics)
    if failures:
        ids = [i for i in report.eps if provider_for(i) == ep] or [ep]
        failed = next((f for i in ids if (f := failure_for(failures, i)) is not None), None)
        if failed is not None:
            return f"{short_ep(ep)}: no session, the model fails to load ({failed.code})"
    return str(plan.verdict_line(ep))


def plan_rows(plan: Any) -> list[list[Any]]:
    rows = []
    for p in plan.partitions:
        graph = "" if p.graph == "main" else _label(p.graph)
        rows.append(
            [
                p.id,
                short_ep(p.ep),
                graph,
                p.size,
                _label(p.first),
                _label(p.last),
                _names(p.inputs),
                _names(p.outputs),
                p.bytes.describe(),
                "fails: " + p.fails if p.fails else "",
            ]
        )
    return rows


def render_partitions(reports: Sequence[Report]) -> str:
    """A table per model and graph level, then the verdict lines."""
    out: list[str] = []
    for report in reports:
        out.append(f"{report.path or '<model>'}: partitions for {' > '.join(report.eps) or 'CPU'}")
        plans = [p for p in report.partitions if hasattr(p, "partitions")]
        if not plans:
            why = report.stats.get("partition_error") or (
                "no accelerator EP given (use --ep)" if not report.eps else "model not loaded"
            )
            out += [f"  no partition prediction: {why}", ""]
            continue
        failures = load_failures(report.diagnostics)
        for plan in plans:
            title = LEVEL_TITLES.get(plan.level, plan.level)
            out.append(f"  {title}" + (f" [{plan.note}]" if plan.note else ""))
            rows = plan_rows(plan)
            any_fail = any(r[-1] for r in rows)
            any_sub = any(r[2] for r in rows)
            headers = [
                "id",
                "EP",
                "graph",
                "nodes",
                "first",
                "last",
                "inputs in",
                "outputs out",
                "bytes/inference",
                "note",
            ]
            keep = [
                i
                for i in range(len(headers))
                if (headers[i] != "graph" or any_sub) and (headers[i] != "note" or any_fail)
            ]
            from tabulate import tabulate  # only for --report partitions

            table = tabulate(
                [[r[i] for i in keep] for r in rows],
                headers=[headers[i] for i in keep],
                tablefmt="simple",
                maxcolwidths=[_WIDTHS[i] for i in keep],
            )
            out += ["    " + line for line in table.splitlines()]
            for ep in plan.accelerators:
                out.append(f"  {ep_verdict(plan, ep, report, failures)}")
            out.append("")
    return "\n".join(out) + "\n"

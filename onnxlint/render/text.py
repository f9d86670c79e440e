"""Human-readable output: a table per file (tabulate) and a plain list for assertion messages."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from onnxlint.diagnostics import Diagnostic, Severity
from onnxlint.report import Report

_COLORS = {
    Severity.ERROR: "\033[31m",
    Severity.WARNING: "\033[33m",
    Severity.INFO: "\033[36m",
    Severity.HINT: "\033[2m",
}
_RESET = "\033[0m"


def _where(d: Diagnostic) -> str:
    return d.location.describe()


def render_table(reports: Sequence[Report], color: bool = False) -> str:
    out: list[str] = []
    totals = {s: 0 for s in Severity}
    for report in reports:
        out.append(report.path or "<model>")
        if report.diagnostics:
            rows = []
            for d in report.diagnostics:
                sev = d.severity.label
                if color:
                    sev = f"{_COLORS[d.severity]}{sev}{_RESET}"
                fix = f"\nfix: {d.fix.title}" if d.fix else ""
                rows.append([d.code, sev, _where(d), d.ep or "", d.message + fix])
                totals[d.severity] += 1
            out.append(
                tabulate(
                    rows,
                    headers=["code", "severity", "where", "ep", "message"],
                    tablefmt="simple",
                    maxcolwidths=[None, None, 40, 14, 80],
                )
            )
        else:
            out.append("  no findings")
        out.append("")
    files = len(reports)
    unreadable = sum(1 for r in reports if r.fatal)
    parts = [
        f"{totals[s]} {s.label}{'s' if totals[s] != 1 else ''}"
        for s in sorted(Severity, reverse=True)
    ]
    summary = f"Checked {files} model{'s' if files != 1 else ''}: " + ", ".join(parts)
    if unreadable:
        summary += f"; {unreadable} could not be loaded"
    out.append(summary)
    return "\n".join(out) + "\n"


def render_plain(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """One finding per line with its fix: used for assertion messages and logs."""
    lines = []
    for report in reports:
        for d in report.diagnostics:
            if d.severity < min_severity:
                continue
            ep = f" [{d.ep}]" if d.ep else ""
            lines.append(
                f"{report.path or '<model>'}: {_where(d)}: {d.severity.label} {d.code}{ep} {d.message}"
            )
            if d.fix:
                lines.append(
                    f"    fix: {d.fix.title}" + (f" ({d.fix.command})" if d.fix.command else "")
                )
        if report.fatal and not report.diagnostics:
            lines.append(f"{report.path or '<model>'}: could not be loaded")
    return "\n".join(lines)

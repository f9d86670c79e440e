"""GitHub Actions workflow commands (``::error file=...,title=...::message``) and the step
summary (``$GITHUB_STEP_SUMMARY``).

GitHub shows at most 10 annotations of each type (error, warning, notice) per step and
drops the rest silently: the annotations are sorted most serious first and capped there;
what is left over is counted on a plain log line, and the step summary lists everything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from onnxlint.causes import Shown, shown
from onnxlint.diagnostics import Severity
from onnxlint.report import Report

_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.HINT: "notice",
}
#: annotations of one type GitHub shows per step
PER_TYPE_LIMIT = 10
#: GitHub refuses a step summary above 1 MiB; stay well under it
SUMMARY_BYTES = 900_000


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _shown(
    reports: Sequence[Report], min_severity: Severity, show_nodes: bool = False
) -> list[tuple[Report, Shown]]:
    """Causes and findings at or above ``min_severity``, most serious first (stable)."""
    found = [(r, item) for r in reports for item in shown(r, min_severity, show_nodes)]
    return sorted(found, key=lambda ri: -ri[1].severity)


def _text(item: Shown) -> str:
    ep = f" [{item.ep}]" if item.ep else ""
    msg = f"{item.where()}{ep}: {item.message}"
    if item.fix:
        msg += f" (fix: {item.fix.title})"
    return msg


def render_github(
    reports: Sequence[Report],
    *,
    min_severity: Severity = Severity.HINT,
    per_type: int = PER_TYPE_LIMIT,
    show_nodes: bool = False,
) -> str:
    lines = []
    used: Counter[str] = Counter()
    left: Counter[Severity] = Counter()
    for report, item in _shown(reports, min_severity, show_nodes):
        level = _LEVEL[item.severity]
        if used[level] >= per_type:
            left[item.severity] += 1
            continue
        used[level] += 1
        props = []
        if report.path:
            props.append(f"file={_escape_prop(report.path)}")
        props.append(f"title={_escape_prop(f'{item.code} {item.rule}')}")
        lines.append(f"::{level} {','.join(props)}::{_escape_data(_text(item))}")
    if left:
        counts = ", ".join(
            f"{n} {s.label}{'s' if n != 1 else ''}" for s, n in sorted(left.items(), reverse=True)
        )
        lines.append(
            f"onnxlint: {sum(left.values())} more findings not annotated (GitHub shows "
            f"{per_type} of each type per step): {counts}; the step summary lists them all"
        )
    return "\n".join(lines) + ("\n" if lines else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_step_summary(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: the counts, then every finding shown."""
    from onnxlint.render.text import summary_line

    out = ["## onnxlint", "", summary_line(reports, min_severity), ""]
    found = _shown(reports, min_severity, show_nodes=True)
    if found:
        out += ["| severity | code | model | where | EP | message |", "|---|---|---|---|---|---|"]
    size = sum(len(line) + 1 for line in out)
    for k, (report, d) in enumerate(found):
        row = (
            f"| {d.severity.label} | {d.code} | {_cell(report.path or '')} | "
            f"{_cell(d.where())} | {d.ep or ''} | {_cell(d.message)} |"
        )
        size += len(row.encode()) + 1
        if size > SUMMARY_BYTES:
            out.append("")
            out.append(f"{len(found) - k} more findings not listed (GitHub's summary size limit)")
            break
        out.append(row)
    return "\n".join(out) + "\n"

"""GitHub Actions workflow commands (``::error file=...,title=...::message``)."""

from __future__ import annotations

from collections.abc import Sequence

from onnxlint.diagnostics import Severity
from onnxlint.report import Report

_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.HINT: "notice",
}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(reports: Sequence[Report]) -> str:
    lines = []
    for report in reports:
        for d in report.diagnostics:
            props = []
            if report.path:
                props.append(f"file={_escape_prop(report.path)}")
            props.append(f"title={_escape_prop(f'{d.code} {d.rule}')}")
            where = d.location.describe()
            ep = f" [{d.ep}]" if d.ep else ""
            msg = f"{where}{ep}: {d.message}"
            if d.disproved:
                msg += f" ({d.disproved_text()})"
            if d.fix:
                msg += f" (fix: {d.fix.title})"
            lines.append(f"::{_LEVEL[d.severity]} {','.join(props)}::{_escape_data(msg)}")
    return "\n".join(lines) + ("\n" if lines else "")

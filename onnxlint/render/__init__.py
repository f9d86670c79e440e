"""Renderers: the only place where diagnostics become text."""

from __future__ import annotations

from collections.abc import Sequence

from onnxlint.diagnostics import Severity
from onnxlint.report import Report

FORMATS = ("table", "concise", "json", "sarif", "github")


def render(
    reports: Sequence[Report],
    fmt: str = "table",
    color: bool = False,
    *,
    min_severity: Severity = Severity.HINT,
    width: int | None = None,
    quiet: bool = False,
) -> str:
    """``reports`` in ``fmt``. ``min_severity``, ``width`` and ``quiet`` are display
    settings of the text formats (table, concise); the machine formats list everything."""
    if fmt == "table":
        from onnxlint.render.text import render_table

        return render_table(
            reports, color=color, min_severity=min_severity, width=width, quiet=quiet
        )
    if fmt == "concise":
        from onnxlint.render.text import render_concise

        return render_concise(reports, color=color, min_severity=min_severity, quiet=quiet)
    if fmt == "json":
        from onnxlint.render.jsonfmt import render_json

        return render_json(reports)
    if fmt == "sarif":
        import json

        from onnxlint.render.sarif import to_sarif

        return json.dumps(to_sarif(reports), indent=2)
    if fmt == "github":
        from onnxlint.render.github import render_github

        return render_github(reports)
    raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")

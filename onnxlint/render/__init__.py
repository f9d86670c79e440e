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
    sarif_root: str | None = None,
    partitions: bool = False,
    show_nodes: bool = False,
) -> str:
    """``reports`` in ``fmt``, findings below ``min_severity`` left out (counted in the text
    formats' summary). ``width``, ``quiet``: text formats; ``sarif_root``, ``partitions``:
    SARIF's URI root and its opt-in partitions property; ``show_nodes``: every finding
    instead of one entry per root cause (see :func:`onnxlint.causes.shown`)."""
    if fmt == "table":
        from onnxlint.render.text import render_table

        return render_table(
            reports,
            color=color,
            min_severity=min_severity,
            width=width,
            quiet=quiet,
            show_nodes=show_nodes,
        )
    if fmt == "concise":
        from onnxlint.render.text import render_concise

        return render_concise(
            reports, color=color, min_severity=min_severity, quiet=quiet, show_nodes=show_nodes
        )
    if fmt == "json":
        from onnxlint.render.jsonfmt import render_json

        return render_json(reports, min_severity=min_severity)
    if fmt == "sarif":
        import json

        from onnxlint.render.sarif import to_sarif

        doc = to_sarif(
            reports,
            root=sarif_root,
            min_severity=min_severity,
            partitions=partitions,
            show_nodes=show_nodes,
        )
        return json.dumps(doc, indent=2)
    if fmt == "github":
        from onnxlint.render.github import render_github

        return render_github(reports, min_severity=min_severity, show_nodes=show_nodes)
    raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")

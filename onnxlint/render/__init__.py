"""Renderers: the only place where diagnostics become text."""

from __future__ import annotations

from collections.abc import Sequence

from onnxlint.report import Report

FORMATS = ("table", "json", "sarif", "github")


def render(reports: Sequence[Report], fmt: str = "table", color: bool = False) -> str:
    if fmt == "table":
        from onnxlint.render.text import render_table

        return render_table(reports, color=color)
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

"""JSON output; documented in docs/json-format.md, described by the JSON Schema
``rules/schema/report.schema.json`` and versioned by ``schema_version``.

``onnxlint --format json`` and ``Report.to_json()`` write the same document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from onnxlint.diagnostics import Severity
from onnxlint.report import Report
from onnxlint.version import __version__

SCHEMA_VERSION = 1


def render_json(
    reports: Sequence[Report], min_severity: Severity = Severity.HINT, indent: int | None = 2
) -> str:
    if min_severity > Severity.HINT:
        reports = [
            replace(r, diagnostics=[d for d in r.diagnostics if d.severity >= min_severity])
            for r in reports
        ]
    return json.dumps(json_document(reports), indent=indent)


def json_document(reports: Sequence[Report]) -> dict[str, Any]:
    """The JSON document for ``reports`` (one entry under ``files`` per model)."""
    totals: dict[str, int] = {}
    for r in reports:
        for label, n in r.counts().items():
            totals[label] = totals.get(label, 0) + n
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "onnxlint", "version": __version__},
        "summary": {"files": len(reports), "unreadable": sum(r.fatal for r in reports), **totals},
        "files": [r.to_dict() for r in reports],
    }
    return doc

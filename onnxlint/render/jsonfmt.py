"""JSON output; documented in docs/json-format.md, described by the JSON Schema
``rules/schema/report.schema.json`` and versioned by ``schema_version``.

``onnxlint --format json`` and ``Report.to_json()`` write the same document, built by
:func:`onnxlint.report.json_document`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from onnxlint.diagnostics import Severity
from onnxlint.report import SCHEMA_VERSION, Report, json_document

__all__ = ["SCHEMA_VERSION", "json_document", "render_json"]


def render_json(
    reports: Sequence[Report], min_severity: Severity = Severity.HINT, indent: int | None = 2
) -> str:
    if min_severity > Severity.HINT:
        reports = [
            replace(r, diagnostics=[d for d in r.diagnostics if d.severity >= min_severity])
            for r in reports
        ]
    return json.dumps(json_document(reports), indent=indent)

"""JSON output; documented in docs/json-format.md, described by the JSON Schema
``rules/schema/report.schema.json`` and versioned by ``schema_version``.

``onnxlint --format json`` and ``Report.to_json()`` write the same document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from onnxlint import __version__
from onnxlint.report import Report

SCHEMA_VERSION = 1


def render_json(reports: Sequence[Report], indent: int | None = 2) -> str:
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

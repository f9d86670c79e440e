"""SARIF 2.1.0 output for code-scanning services.

ONNX models have no lines, so results use logical locations (the graph path of
the node) plus the model file as the physical artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnxlint import __version__
from onnxlint.diagnostics import Severity
from onnxlint.report import Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}
DOCS_URL = "https://github.com/onnxlint/onnxlint/blob/main/docs/rules.md#{anchor}"


def _rule_descriptors(codes: set[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    from onnxlint.rule import all_rules

    rules, index = [], {}
    for cls in all_rules():
        if cls.code not in codes:
            continue
        index[cls.code] = len(rules)
        rules.append(
            {
                "id": cls.code,
                "name": cls.name,
                "shortDescription": {"text": cls.summary()},
                "fullDescription": {"text": cls.doc_sections().get("What it does", cls.summary())},
                "helpUri": DOCS_URL.format(anchor=f"{cls.code.lower()}-{cls.name}"),
                "help": {"text": cls.doc_sections().get("Fix", "")},
                "defaultConfiguration": {"level": _LEVEL[cls.severity]},
                "properties": {"category": cls.category.value},
            }
        )
    return rules, index


def to_sarif(reports: Sequence[Report]) -> dict[str, Any]:
    codes = {d.code for r in reports for d in r.diagnostics}
    rules, index = _rule_descriptors(codes)
    results = []
    for report in reports:
        for d in report.diagnostics:
            loc: dict[str, Any] = {
                "logicalLocations": [
                    {
                        "name": d.location.node_name or d.location.tensor or d.location.graph,
                        "fullyQualifiedName": d.location.node_path or d.location.graph,
                        "kind": "function" if d.location.node_index is not None else "module",
                    }
                ]
            }
            if report.path:
                loc["physicalLocation"] = {
                    "artifactLocation": {"uri": report.path.replace("\\", "/")},
                    # a model has no lines, but GitHub code scanning places (and may
                    # reject) results without region.startLine: point at the file's start
                    "region": {"startLine": 1},
                }
            result: dict[str, Any] = {
                "ruleId": d.code,
                "level": _LEVEL[d.severity],
                "message": {"text": d.message},
                "locations": [loc],
                "partialFingerprints": {"onnxlint/v1": d.fingerprint()},
                "properties": {"category": d.category.value, "severity": d.severity.label},
            }
            if d.code in index:
                result["ruleIndex"] = index[d.code]
            if d.ep:
                result["properties"]["ep"] = d.ep
            if d.fix:
                result["properties"]["fix"] = d.fix.title
            if d.disproved:
                result["properties"]["disproved"] = d.disproved
                result["message"]["text"] += f" ({d.disproved_text()})"
            results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "onnxlint",
                        "version": __version__,
                        "informationUri": "https://github.com/onnxlint/onnxlint",
                        "rules": rules,
                    }
                },
                "results": results,
                # predicted ORT partitions per model (``--ep``); SARIF has no slot for them
                "properties": {
                    "partitions": {
                        r.path or "<model>": [
                            p.to_dict() if hasattr(p, "to_dict") else p for p in r.partitions
                        ]
                        for r in reports
                        if r.partitions
                    }
                },
            }
        ],
    }

"""SARIF 2.1.0 output for code-scanning services.

ONNX models have no lines, so results use logical locations (the graph path of
the node) plus the model file as the physical artifact. Artifact URIs are
percent-encoded; a model under the root (``--sarif-root``, default the working
folder) is named relative to it, with ``uriBaseId: %SRCROOT%`` and the root in
``originalUriBaseIds``; one outside it by an absolute ``file:`` URI.

GitHub code scanning rejects an upload above 25,000 results and shows 5,000:
:func:`result_count_problem` says which side of those a run falls.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from onnxlint.diagnostics import Location, Severity
from onnxlint.report import Report
from onnxlint.version import __version__

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

    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
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


#: GitHub code scanning: results it displays, and the most one upload may hold
SHOWN_RESULTS = 5_000
MAX_RESULTS = 25_000
#: the base id of repository-relative URIs (the name GitHub's documentation uses)
ROOT_ID = "%SRCROOT%"


def result_count_problem(n: int) -> tuple[str, str] | None:
    """``("error"|"warning", text)`` when ``n`` results exceed what GitHub takes or shows."""
    narrow = "narrow it with --min-severity, --select or --ignore, or lint fewer models per run"
    if n > MAX_RESULTS:
        return "error", f"{n} SARIF results: GitHub rejects uploads above {MAX_RESULTS}; {narrow}"
    if n > SHOWN_RESULTS:
        return "warning", f"{n} SARIF results: GitHub shows only {SHOWN_RESULTS}; {narrow}"
    return None


def artifact_location(path: str, root: Path | None) -> dict[str, Any]:
    """A percent-encoded ``artifactLocation`` for a model path: relative to ``root`` with
    ``uriBaseId`` when it lies under it, else an absolute ``file:`` URI (``root`` None:
    a relative path stays relative)."""
    p = Path(path)
    if root is not None:
        try:
            rel = Path(os.path.abspath(p)).relative_to(Path(os.path.abspath(root)))
        except ValueError:
            return {"uri": Path(os.path.abspath(p)).as_uri()}
        return {"uri": quote(rel.as_posix(), safe="/"), "uriBaseId": ROOT_ID}
    if p.is_absolute():
        return {"uri": p.as_uri()}
    return {"uri": quote(path.replace("\\", "/"), safe="/")}


#: related locations one result lists (a cause that costs 5,000 nodes names the first ones)
MAX_RELATED = 100


def _logical(where: Location) -> dict[str, Any]:
    return {
        "name": where.node_name or where.tensor or where.graph,
        "fullyQualifiedName": where.node_path or where.graph,
        "kind": "function" if where.node_index is not None else "module",
    }


def _physical(path: str, base: Path | None) -> dict[str, Any]:
    # a model has no lines, but GitHub code scanning places (and may reject) results
    # without region.startLine: point at the file's start
    return {"artifactLocation": artifact_location(path, base), "region": {"startLine": 1}}


def to_sarif(
    reports: Sequence[Report],
    *,
    root: str | os.PathLike[str] | None = None,
    min_severity: Severity = Severity.HINT,
    partitions: bool = False,
    show_nodes: bool = False,
) -> dict[str, Any]:
    """The SARIF log of ``reports``: one result per root cause (its nodes as
    ``relatedLocations``) or finding (``show_nodes``: per finding), at or above
    ``min_severity``; model paths relative to ``root`` (see :func:`artifact_location`);
    the predicted partitions as a run property only when ``partitions`` is asked for."""
    from onnxlint.causes import shown

    base = Path(root) if root is not None else None
    items = [shown(r, min_severity, show_nodes) for r in reports]
    codes = {item.code for its in items for item in its}
    rules, index = _rule_descriptors(codes)
    results = []
    for report, its in zip(reports, items, strict=True):
        for item in its:
            loc: dict[str, Any] = {"logicalLocations": [_logical(item.location)]}
            if report.path:
                loc["physicalLocation"] = _physical(report.path, base)
            result: dict[str, Any] = {
                "ruleId": item.code,
                "level": _LEVEL[item.severity],
                "message": {"text": item.message},
                "locations": [loc],
                "partialFingerprints": {"onnxlint/v1": item.fingerprint},
                "properties": {"category": item.category, "severity": item.severity.label},
            }
            if item.code in index:
                result["ruleIndex"] = index[item.code]
            if item.ep:
                result["properties"]["ep"] = item.ep
            if item.fix:
                result["properties"]["fix"] = item.fix.title
            related = item.related[:MAX_RELATED]
            if related:
                result["relatedLocations"] = [
                    {
                        "id": k,
                        "logicalLocations": [_logical(r)],
                        "message": {"text": r.describe()},
                        **(
                            {"physicalLocation": _physical(report.path, base)}
                            if report.path
                            else {}
                        ),
                    }
                    for k, r in enumerate(related)
                ]
            if item.group is not None:
                result["properties"]["cause"] = item.group.to_dict()
            d = item.diagnostic
            if d is not None and d.disproved:
                result["properties"]["disproved"] = d.disproved
            results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "onnxlint",
                "version": __version__,
                "informationUri": "https://github.com/onnxlint/onnxlint",
                "rules": rules,
            }
        },
        "results": results,
    }
    if base is not None:
        run["originalUriBaseIds"] = {
            ROOT_ID: {"uri": Path(os.path.abspath(base)).as_uri().rstrip("/") + "/"}
        }
    if partitions:
        # predicted ORT partitions per model (``--ep``); SARIF has no slot for them
        run["properties"] = {
            "partitions": {
                r.path or "<model>": [
                    p.to_dict() if hasattr(p, "to_dict") else p for p in r.partitions
                ]
                for r in reports
                if r.partitions
            }
        }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}

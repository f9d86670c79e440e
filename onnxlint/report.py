"""The result of linting one model."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from onnxlint.diagnostics import Diagnostic, Severity
from onnxlint.version import __version__


class LintError(AssertionError):
    """Raised by ``Report.raise_for_errors``; the message is the rendered findings."""


@dataclass
class Report:
    path: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: True when the model could not be loaded (exit code 2)
    fatal: bool = False
    eps: list[str] = field(default_factory=list)
    content_hash: str = ""
    #: partition prediction per EP list, filled in by the partition analysis when requested
    partitions: list[Any] = field(default_factory=list)
    #: node path -> predicted EP, for front ends (hover, inlay hints)
    assignment: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: the symbolic dims the model's graph inputs declare (what ``--assume-dim`` may name)
    dim_params: frozenset[str] = frozenset()
    #: predicted outcomes of remedies (``onnxlint.causes.WhatIf``), joined to causes on render
    what_ifs: list[Any] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity >= Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.WARNING]

    def at_or_above(self, severity: Severity) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity >= severity]

    def counts(self) -> dict[str, int]:
        c = Counter(d.severity.label for d in self.diagnostics)
        return {s.label: c.get(s.label, 0) for s in sorted(Severity, reverse=True)}

    def summary(self) -> str:
        counts = self.counts()
        parts = [f"{n} {label}{'s' if n != 1 else ''}" for label, n in counts.items() if n]
        where = self.path or "model"
        if self.fatal:
            return f"{where}: could not be loaded"
        return f"{where}: " + (", ".join(parts) if parts else "no findings")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "fatal": self.fatal,
            "eps": self.eps,
            "content_hash": self.content_hash,
            "counts": self.counts(),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "partitions": [p.to_dict() if hasattr(p, "to_dict") else p for p in self.partitions],
            "load_failures": self.load_failures(),
            "causes": [g.to_dict() for g in self.causes()],
            "stats": _plain(self.stats),
        }

    def load_failures(self) -> dict[str, str]:
        """The code of the finding that says a session fails at load, by the profile id of
        its EP (``""``: every EP); those EPs' partitions are not made
        (:mod:`onnxlint.load_failures`)."""
        from onnxlint.load_failures import load_failures

        return {ep: d.code for ep, d in load_failures(self.diagnostics).items()}

    def causes(self) -> list[Any]:
        """The root causes shared by several findings (``onnxlint.causes.CauseGroup``)."""
        from onnxlint.causes import group

        return group(self)

    def to_json(self, indent: int | None = 2) -> str:
        """The document ``onnxlint --format json`` prints for this one model
        (docs/json-format.md); ``to_dict()`` is its ``files[0]`` entry. The other formats:
        ``onnxlint.render(report, fmt)`` and ``onnxlint.to_sarif(report)``."""
        return json.dumps(json_document([self]), indent=indent)

    def raise_for_errors(self, fail_on: Severity | str = Severity.ERROR) -> None:
        level = Severity.parse(fail_on) if isinstance(fail_on, str) else fail_on
        if self.fatal or self.at_or_above(level):
            raise LintError(plain_text([self], min_severity=level))


#: the version of the JSON document's shape (docs/json-format.md)
SCHEMA_VERSION = 1


def json_document(reports: Sequence[Report]) -> dict[str, Any]:
    """The JSON document for ``reports`` (one entry under ``files`` per model)."""
    totals: dict[str, int] = {}
    for r in reports:
        for label, n in r.counts().items():
            totals[label] = totals.get(label, 0) + n
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "onnxlint", "version": __version__},
        "summary": {"files": len(reports), "unreadable": sum(r.fatal for r in reports), **totals},
        "files": [r.to_dict() for r in reports],
    }


def plain_text(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """One finding per line with its fix: for assertion messages and logs."""
    lines = []
    for report in reports:
        for d in report.diagnostics:
            if d.severity < min_severity:
                continue
            ep = f" [{d.ep}]" if d.ep else ""
            note = f" [{d.disproved_text()}]" if d.disproved else ""
            lines.append(
                f"{report.path or '<model>'}: {d.location.describe()}: {d.severity.label} "
                f"{d.code}{ep} {d.message}{note}"
            )
            if d.fix:
                lines.append(
                    f"    fix: {d.fix.title}" + (f" ({d.fix.command})" if d.fix.command else "")
                )
        if report.fatal and not report.diagnostics:
            lines.append(f"{report.path or '<model>'}: could not be loaded")
    return "\n".join(lines)


def _plain(value: Any) -> Any:
    """Stats as JSON-ready data (dataclasses and objects with to_dict are expanded)."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

"""Baselines: accept today's findings, report only new ones.

A team adopting onnxlint on an existing model zoo records the current findings
once (``onnxlint models/ --write-baseline .onnxlint-baseline.json``) and from
then on runs with ``--baseline .onnxlint-baseline.json``: only findings that
are not in the file are reported, so the linter gates regressions without a
wall of old errors.

A finding is keyed by :meth:`Diagnostic.fingerprint` (model path + rule code +
stable node location + tensor + EP), never by a line or a node index alone, so
re-exporting a model that renumbers unrelated nodes does not resurrect old
findings. Model paths are stored relative to the baseline file's folder, in
POSIX form, so the file works from any working directory and on any OS.
Identical fingerprints are counted: if a node had two findings of one rule and
now has three, one is new.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onnxlint.diagnostics import Diagnostic
from onnxlint.report import Report

BASELINE_VERSION = 1
#: what the file says it is, so a stray JSON file is refused with a clear message
BASELINE_KIND = "onnxlint-baseline"


class BaselineError(ValueError):
    """The baseline file is missing, unreadable or not an onnxlint baseline."""


def normalise_path(label: str | None, root: Path) -> str:
    """``label`` relative to ``root`` in POSIX form; unchanged (POSIX) when outside it."""
    if not label:
        return ""
    path = Path(label)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


def key_for(diag: Diagnostic, root: Path) -> str:
    """The baseline key of a finding: its fingerprint with a root-relative model path."""
    return replace(diag, path=normalise_path(diag.path, root)).fingerprint()


def _is_unsilenceable(report: Report, diag: Diagnostic) -> bool:
    # a model that could not be loaded was not checked at all: never hide that
    return report.fatal and diag.category.value == "load"


@dataclass
class Baseline:
    """Recorded findings: key -> how many times it occurred, plus a readable entry."""

    root: Path
    counts: Counter[str] = field(default_factory=Counter)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the file it was loaded from, if any
    source: Path | None = None

    @classmethod
    def from_reports(cls, reports: Iterable[Report], root: Path) -> Baseline:
        base = cls(root=root)
        for report in reports:
            for d in report.diagnostics:
                if _is_unsilenceable(report, d):
                    continue
                key = key_for(d, root)
                base.counts[key] += 1
                # the readable part is for reviewers of the file's diff; matching uses the key
                base.entries.setdefault(
                    key,
                    {
                        "path": normalise_path(d.path, root),
                        "code": d.code,
                        "rule": d.rule,
                        "where": d.location.describe(),
                        "ep": d.ep,
                        "message": d.message,
                    },
                )
        return base

    def __len__(self) -> int:
        return sum(self.counts.values())

    # -- file I/O -----------------------------------------------------------------
    def to_json(self) -> str:
        findings = []
        for key in sorted(self.counts):
            findings.append({"key": key, "count": self.counts[key], **self.entries.get(key, {})})
        doc = {"kind": BASELINE_KIND, "version": BASELINE_VERSION, "findings": findings}
        return json.dumps(doc, indent=2, sort_keys=False) + "\n"

    def write(self, path: Path) -> None:
        from onnxlint.fsutil import atomic_write_text

        atomic_write_text(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Baseline:
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BaselineError(
                f"baseline {path} does not exist (create it with --write-baseline {path})"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BaselineError(f"baseline {path} is unreadable: {exc}") from None
        if not isinstance(raw, dict) or raw.get("kind") != BASELINE_KIND:
            raise BaselineError(
                f'{path} is not an onnxlint baseline (no "kind": "{BASELINE_KIND}")'
            )
        if raw.get("version") != BASELINE_VERSION:
            raise BaselineError(
                f"baseline {path} has version {raw.get('version')!r}; this onnxlint reads "
                f"version {BASELINE_VERSION} (rewrite it with --write-baseline)"
            )
        findings = raw.get("findings")
        if not isinstance(findings, list):
            raise BaselineError(f'baseline {path}: "findings" must be a list')
        base = cls(root=path.parent if str(path.parent) else Path("."), source=path)
        for i, item in enumerate(findings):
            key = item.get("key") if isinstance(item, dict) else None
            count = item.get("count", 1) if isinstance(item, dict) else None
            if not isinstance(key, str) or not isinstance(count, int) or count < 1:
                raise BaselineError(
                    f'baseline {path}: findings[{i}] needs a string "key" and a positive "count"'
                )
            base.counts[key] += count
            base.entries[key] = {k: v for k, v in item.items() if k not in ("key", "count")}
        return base

    # -- filtering ------------------------------------------------------------------
    def filter(self, reports: Sequence[Report]) -> BaselineResult:
        """New copies of ``reports`` holding only findings the baseline does not cover."""
        remaining = Counter(self.counts)
        out: list[Report] = []
        hidden = 0
        for report in reports:
            kept: list[Diagnostic] = []
            for d in report.diagnostics:
                key = key_for(d, self.root)
                if remaining[key] > 0 and not _is_unsilenceable(report, d):
                    remaining[key] -= 1
                    hidden += 1
                    continue
                kept.append(d)
            new = replace(report, diagnostics=kept, stats={**report.stats})
            new.stats["baselined"] = len(report.diagnostics) - len(kept)
            out.append(new)
        # entries that matched nothing: fixed findings, or models not linted this run
        stale = sorted(k for k, n in remaining.items() if n > 0)
        return BaselineResult(reports=out, hidden=hidden, stale=stale)


@dataclass
class BaselineResult:
    reports: list[Report]
    #: findings hidden because the baseline records them
    hidden: int
    #: baseline keys that no finding matched this run (fixed, or the model was not linted)
    stale: list[str]

    def summary(self, path: str) -> str:
        text = f"onnxlint: {self.hidden} known finding{'s' if self.hidden != 1 else ''} hidden by baseline {path}"
        if self.stale:
            text += (
                f"; {len(self.stale)} baseline entr{'ies' if len(self.stale) != 1 else 'y'} "
                "matched nothing (fixed, or not linted this run)"
            )
        return text

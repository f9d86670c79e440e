"""What a probe measured, per case, and the file it is kept in (``rules/measured/<ep>.json``)."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.fsutil import atomic_write_text
from onnxlint.runtime.results import STATUS_OK

if TYPE_CHECKING:
    import onnx


MEASURED_SCHEMA = "onnxlint-measured/1"


@dataclass
class ProbeCase:
    """One single-node model to probe."""

    name: str
    op_type: str
    domain: str
    opset: int
    since_version: int | None
    input_dtypes: list[str]
    model: onnx.ModelProto
    variant: str | None = None  # dtype of a generated variant, None for the original
    opset_lowered_from: int | None = None
    signature: str | None = None  # from real models (--from-models): the node signature
    seen: int = 0  # ... how many nodes of those models had it
    seen_in: list[str] = field(default_factory=list)  # ... and the first models they were in


@dataclass
class Measurement:
    """What the EP did with one probe case."""

    name: str
    op: str
    domain: str
    opset: int
    since: int | None
    dtypes: list[str]
    claimed: bool | None  # None: unknown (the session failed before saying)
    status: str  # ok | session-error | load-error | crash | timeout | oom | runner-error
    reason: str | None = None  # the EP's own reason when it refused
    error: str | None = None  # session error (e.g. claimed, then failed)
    create_s: float | None = None
    variant: str | None = None
    opset_lowered_from: int | None = None
    nodes_on_ep: int = 0  # reported nodes on the EP, including inserted ones
    signature: str | None = None  # the real node signature (``--from-models``)
    seen: int = 0
    seen_in: list[str] | None = None


@dataclass
class ProbeReport:
    ep: str
    provider: str
    options: dict[str, str]
    date: str
    versions: dict[str, Any]
    optimization: str
    measurements: list[Measurement] = field(default_factory=list)
    #: where the probe models came from (None: ONNX's node test cases)
    source: str | None = None
    # The models behind the measurements (not serialised; used for comparison).
    cases: list[ProbeCase] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        ms = self.measurements
        statuses = Counter(m.status for m in ms)
        times = sorted(m.create_s for m in ms if m.create_s is not None)
        out: dict[str, Any] = {
            "models": len(ms),
            "ops": len({(m.domain, m.op) for m in ms}),
            "claimed": sum(1 for m in ms if m.claimed),
            "refused": sum(1 for m in ms if m.claimed is False),
            "unknown": sum(1 for m in ms if m.claimed is None),
            "claimed_then_failed": sum(1 for m in ms if m.claimed and m.status != STATUS_OK),
            "statuses": dict(sorted(statuses.items())),
        }
        if times:
            out["create_s"] = {
                "median": round(statistics.median(times), 4),
                "p95": round(times[int(0.95 * (len(times) - 1))], 4),
                "max": round(times[-1], 4),
                "total": round(sum(times), 2),
            }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeReport:
        """Read back a measured file (``rules/measured/<ep>.json``)."""
        rows = []
        for row in data.get("cases", []):
            full = {"since": None, "claimed": None, "dtypes": [], "domain": "", **row}
            rows.append(Measurement(**full))
        return cls(
            ep=data["ep"],
            provider=data["provider"],
            options=dict(data.get("options", {})),
            date=data["date"],
            versions=dict(data.get("versions", {})),
            optimization=data.get("optimization", "disabled"),
            measurements=rows,
            source=data.get("source"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": MEASURED_SCHEMA,
            "ep": self.ep,
            "provider": self.provider,
            "options": self.options,
            "date": self.date,
            "versions": self.versions,
            "optimization": self.optimization,
            "source": self.source
            or "onnx.backend.test.case.node.collect_testcases() single-node models "
            "+ dtype variants (onnxlint probe)",
            "summary": self.summary(),
            "cases": [_compact(asdict(m)) for m in self.measurements],
        }


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if (v is not None and v != 0) or k == "claimed"}


def write_report(report: ProbeReport, path: str | os.PathLike[str]) -> None:
    """Compact JSON, one case per line, so a re-measurement is a readable diff."""
    data = report.to_json()
    cases = data.pop("cases")
    head = json.dumps(data, separators=(",", ":"), sort_keys=True)
    lines = [head[:-1] + ',"cases":[']
    lines += [json.dumps(c, separators=(",", ":")) + "," for c in cases]
    if cases:
        lines[-1] = lines[-1][:-1]
    lines.append("]}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # a unique temp name, created exclusively: a planted OUT.tmp symlink is never followed
    atomic_write_text(p, "\n".join(lines) + "\n")


def load_measured(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# Statuses that say something about the machine at the time, not about the EP:
# worth measuring again.
RETRY_STATUSES = ("runner-error", "timeout")


def merge_remeasured(report: ProbeReport, again: ProbeReport) -> ProbeReport:
    """Replace the measurements of ``report`` that ``again`` re-measured."""
    redo = {m.name: m for m in again.measurements}
    report.measurements = [redo.get(m.name, m) for m in report.measurements]
    return report

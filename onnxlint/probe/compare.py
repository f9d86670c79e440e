"""The measurements against the shipped profile: where the profile claims too much or too little."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from onnxlint.probe.cases import build_cases, ort_limits
from onnxlint.probe.report import ProbeCase, ProbeReport


@dataclass
class Disagreement:
    name: str
    op: str
    domain: str
    opset: int
    dtypes: list[str]
    measured: bool
    predicted: bool
    reason: str | None  # the EP's reason (measured) when refused
    profile_reason: str | None  # the profile's reason when it predicts a refusal


def compare_with_profile(
    report: ProbeReport | dict[str, Any],
    cases: Sequence[ProbeCase] | None = None,
) -> tuple[float, list[Disagreement]] | None:
    """Agreement of the shipped profile with the measurement (claimed vs not claimed).

    Returns None when the profile machinery or a profile for the EP is missing.
    Cases the EP could not be measured on (claimed unknown) are left out.
    """
    try:
        from onnxlint import profiles
        from onnxlint.analyses import capability, single_node_facts
        from onnxlint.profiles.build import for_ort
    except ImportError:
        return None
    data = report.to_json() if isinstance(report, ProbeReport) else report
    try:
        profile = profiles.load_profile(data["ep"])
    except Exception:
        try:
            profile = profiles.load_profile(data["provider"])
        except Exception:
            return None
    # judged with the ORT-release limits of the ORT that was measured
    profile = for_ort(profile, data.get("versions", {}).get("onnxruntime"))
    if not cases and isinstance(report, ProbeReport):
        cases = report.cases
    if not cases:
        max_opset, max_ir = ort_limits(data.get("versions", {}).get("onnxruntime"))
        cases = build_cases(max_opset=max_opset, max_ir=max_ir, variants=True)
    by_name = {c.name: c for c in cases}
    agree = total = 0
    out: list[Disagreement] = []
    for row in data["cases"]:
        measured = row.get("claimed")
        case = by_name.get(row["name"])
        if measured is None or case is None or row.get("status") == "load-error":
            continue
        try:
            facts = single_node_facts.facts_from_model(case.model, 0)
            verdict = capability.evaluate(profile, facts)
        except Exception:
            continue
        predicted = _claims(verdict)
        if predicted is None:
            continue
        total += 1
        if predicted == measured:
            agree += 1
            continue
        out.append(
            Disagreement(
                name=row["name"],
                op=row["op"],
                domain=row.get("domain", ""),
                opset=row["opset"],
                dtypes=row.get("dtypes", []),
                measured=bool(measured),
                predicted=predicted,
                reason=row.get("reason"),
                profile_reason=getattr(verdict, "reason", None) or _verdict_reason(verdict),
            )
        )
    return (agree / total if total else 1.0), out


def _claims(verdict: Any) -> bool | None:
    for attr in ("claimed", "supported", "claims"):
        if hasattr(verdict, attr):
            v = getattr(verdict, attr)
            return None if v is None else bool(v)
    return None


def _verdict_reason(verdict: Any) -> str | None:
    for attr in ("message", "reasons"):
        v = getattr(verdict, attr, None)
        if v:
            return v if isinstance(v, str) else "; ".join(map(str, v))
    return None

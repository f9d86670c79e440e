"""How often does a shipped profile agree with what the real EP measured?

Reads a measurement written by ``onnxlint probe`` (``rules/measured/<ep>.json``),
rebuilds the same single-node models (ONNX node test cases + dtype variants,
lowered to the opsets the measuring ORT loads), evaluates each with the shipped
profile and compares *claimed vs not claimed*. Cases the EP could not be
measured on (claimed unknown) are left out.

    python tools/agreement.py rules/measured/qnn.json [--show 40]

Prints the agreement figure and the disagreements grouped by op, which is what
one reads to correct a profile.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from onnxlint import profiles  # noqa: E402
from onnxlint.analyses.capability import evaluate  # noqa: E402
from onnxlint.analyses.single_node_facts import facts_from_model  # noqa: E402
from onnxlint.profiles.build import for_ort  # noqa: E402

# Which shipped profile describes each probed EP (the probe writes its short name).
PROFILE_FOR = {"cpu": "cpu", "qnn": "qnn-htp", "openvino": "openvino-cpu"}


@dataclass
class Mismatch:
    name: str
    op: str
    measured: bool
    predicted: bool
    ep_reason: str | None
    profile_reason: str


@dataclass
class Agreement:
    profile: str
    total: int = 0
    agree: int = 0
    skipped: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    # Sessions where the EP claimed the node and then failed to compile it.
    failed_after_claim: int = 0
    predicted_failures: int = 0

    @property
    def ratio(self) -> float:
        return self.agree / self.total if self.total else 1.0


_CASES: dict[tuple[int | None, int | None], dict[str, Any]] = {}


def _cases(max_opset: int | None, max_ir: int | None) -> dict[str, Any]:
    key = (max_opset, max_ir)
    if key not in _CASES:
        from onnxlint.probe import build_cases

        _CASES[key] = {
            c.name: c for c in build_cases(max_opset=max_opset, max_ir=max_ir, variants=True)
        }
    return _CASES[key]


def agreement(measured: dict[str, Any], profile_id: str | None = None) -> Agreement:
    """Compare one measurement with its shipped profile."""
    from onnxlint.probe import ort_limits

    pid = profile_id or PROFILE_FOR.get(measured["ep"], measured["ep"])
    ort = measured.get("versions", {}).get("onnxruntime")
    # the ORT-release opset limit of the ORT that was measured, not of the installed one
    profile = for_ort(profiles.load_profile(pid), ort)
    max_opset, max_ir = ort_limits(ort)
    cases = _cases(max_opset, max_ir)
    out = Agreement(profile=pid)
    for row in measured["cases"]:
        claimed = row.get("claimed")
        case = cases.get(row["name"])
        if case is not None and _failed_in_ep(row, measured.get("provider", "")):
            out.failed_after_claim += 1
            if evaluate(profile, facts_from_model(case.model, 0)).fails_after_claim:
                out.predicted_failures += 1
        if claimed is None or case is None:
            out.skipped += 1
            continue
        v = evaluate(profile, facts_from_model(case.model, 0))
        out.total += 1
        if v.claimed == bool(claimed):
            out.agree += 1
        else:
            out.mismatches.append(
                Mismatch(
                    row["name"], row["op"], bool(claimed), v.claimed, row.get("reason"), v.reason
                )
            )
    return out


def _failed_in_ep(row: dict[str, Any], provider: str) -> bool:
    """Claimed, then session creation failed inside the EP itself."""
    if row.get("status") != "session-error":
        return False
    if row.get("claimed"):
        return True
    ep_dir = {"OpenVINOExecutionProvider": "providers/openvino", "QNNExecutionProvider": "qnn"}
    marker = ep_dir.get(provider)
    return bool(marker and marker in (row.get("error") or ""))


def report(a: Agreement, show: int = 30) -> str:
    lines = [
        f"{a.profile}: {a.agree}/{a.total} single-node models agree "
        f"({100 * a.ratio:.2f}%), {a.skipped} not comparable; "
        f"{a.predicted_failures}/{a.failed_after_claim} claimed-then-failed sessions predicted"
    ]
    groups: dict[tuple[str, bool], list[Mismatch]] = defaultdict(list)
    for m in a.mismatches:
        groups[(m.op, m.measured)].append(m)
    order = Counter({k: len(v) for k, v in groups.items()}).most_common(show)
    for (op, measured), _n in order:
        ms = groups[(op, measured)]
        what = "EP claims, profile refuses" if measured else "EP refuses, profile claims"
        lines.append(f"  {op}: {len(ms)} x {what}")
        lines.append(f"      e.g. {ms[0].name}")
        if ms[0].ep_reason:
            lines.append(f"      EP: {ms[0].ep_reason[:200]}")
        lines.append(f"      profile: {ms[0].profile_reason[:200]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured", nargs="+", type=Path)
    ap.add_argument("--profile", help="profile id to compare with (default: from the file)")
    ap.add_argument("--show", type=int, default=30, help="disagreement groups to list")
    args = ap.parse_args(argv)
    for path in args.measured:
        data = json.loads(path.read_text(encoding="utf-8"))
        print(report(agreement(data, args.profile), args.show))


if __name__ == "__main__":
    main()

"""Session results as JSON for the confirm cache, and back (raising on malformed data)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from onnxlint.runtime.results import AssignedNode, Fallback, NodeVerdict, SessionResult


def result_to_json(r: SessionResult) -> dict[str, Any]:
    d = asdict(r)
    d["verdicts"] = [
        {
            "op_type": v.op_type,
            "name": v.name,
            "index": v.index,
            "verdict": "PASSED" if v.passed else "FAILED",
            "reason": v.reason,
            "unit": v.unit,
            "unit_op": v.unit_op,
        }
        for v in r.verdicts
    ]
    return d


def result_from_json(d: dict[str, Any]) -> SessionResult:
    """Rebuild a SessionResult written by :func:`result_to_json`; raises on malformed data."""
    return SessionResult(
        request_id=str(d["request_id"]),
        status=str(d["status"]),
        provider=str(d["provider"]),
        error=d.get("error"),
        error_kind=d.get("error_kind"),
        create_s=d.get("create_s"),
        assignment=[AssignedNode.from_json(n) for n in d.get("assignment") or []],
        assignment_source=d.get("assignment_source"),
        verdicts=[NodeVerdict.from_json(v) for v in d.get("verdicts") or []],
        fallback=Fallback(**(d.get("fallback") or {})),
        session_providers=list(d.get("session_providers") or []),
        versions=dict(d.get("versions") or {}),
        facts=dict(d.get("facts") or {}),
        log_tail=list(d.get("log_tail") or []),
        signal=d.get("signal"),
        worker_pid=None,
        output_path=d.get("output_path"),
        run=d.get("run"),
    )

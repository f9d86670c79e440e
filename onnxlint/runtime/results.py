"""Typed results of real ONNX Runtime sessions created by the isolated worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Status of one request, from the parent's point of view.
STATUS_OK = "ok"  # session created
STATUS_ERROR = "error"  # ORT raised (session creation failed, EP missing, bad model)
STATUS_CRASH = "crash"  # the worker died (signal or unexpected exit) on this request
STATUS_TIMEOUT = "timeout"  # the worker ran past the wall-clock limit and was killed
STATUS_OOM = "oom"  # the worker hit the memory cap
STATUS_RUNNER = "runner-error"  # the runner interpreter is missing or cannot start the worker
STATUSES = (STATUS_OK, STATUS_ERROR, STATUS_CRASH, STATUS_TIMEOUT, STATUS_OOM, STATUS_RUNNER)


@dataclass(frozen=True)
class AssignedNode:
    """One node as ORT reports it after partitioning (names may be renamed)."""

    name: str
    op_type: str
    domain: str
    ep: str

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AssignedNode:
        return cls(
            name=str(d.get("name", "")),
            op_type=str(d.get("op_type", "")),
            domain=str(d.get("domain", "")),
            ep=str(d.get("ep", "")),
        )


@dataclass(frozen=True)
class NodeVerdict:
    """The EP's own verdict on a node from its verbose log (QNN's ``LogNodeSupport``)."""

    op_type: str
    name: str
    index: int  # ORT node index, -1 when the log did not give one
    passed: bool
    reason: str | None
    unit: str = ""  # "OrtNodeUnit" or a QDQ group unit
    unit_op: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NodeVerdict:
        return cls(
            op_type=str(d.get("op_type", "")),
            name=str(d.get("name", "")),
            index=int(d.get("index", -1)),
            passed=d.get("verdict") == "PASSED",
            reason=d.get("reason"),
            unit=str(d.get("unit", "")),
            unit_op=str(d.get("unit_op", "")),
        )


@dataclass(frozen=True)
class Fallback:
    """Silent ways a session can end up not using the requested EP."""

    provider_fallback: bool = False  # ORT retried with CPU only ("Falling back to [...]")
    ep_missing_from_session: bool = False  # the requested EP is not among the session's
    zero_accelerator_nodes: bool = False  # created fine, but the EP claimed no node
    message: str = ""

    @property
    def any(self) -> bool:
        return self.provider_fallback or self.ep_missing_from_session or self.zero_accelerator_nodes


@dataclass
class SessionResult:
    """Outcome of one session request."""

    request_id: str
    status: str
    provider: str
    error: str | None = None
    error_kind: str | None = None
    create_s: float | None = None
    assignment: list[AssignedNode] = field(default_factory=list)
    assignment_source: str | None = None  # "api" (ORT >= 1.24) or "log"
    verdicts: list[NodeVerdict] = field(default_factory=list)
    fallback: Fallback = field(default_factory=Fallback)
    session_providers: list[str] = field(default_factory=list)
    versions: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    log_tail: list[str] = field(default_factory=list)
    signal: int | None = None
    worker_pid: int | None = None
    output_path: str | None = None
    run: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    @property
    def isolated_failure(self) -> bool:
        """True when the worker itself failed (crash, hang, OOM, runner)."""
        return self.status in (STATUS_CRASH, STATUS_TIMEOUT, STATUS_OOM, STATUS_RUNNER)

    def nodes_on(self, ep: str) -> list[AssignedNode]:
        return [n for n in self.assignment if n.ep == ep]

    def refusal_reasons(self) -> dict[tuple[str, str], list[str]]:
        """(op_type, node name) -> the EP's reasons for refusing it, in log order."""
        out: dict[tuple[str, str], list[str]] = {}
        for v in self.verdicts:
            if not v.passed and v.reason:
                reasons = out.setdefault((v.op_type, v.name), [])
                if v.reason not in reasons:
                    reasons.append(v.reason)
        return out

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

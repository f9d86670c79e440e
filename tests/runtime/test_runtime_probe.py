"""``onnxlint probe``: building the cases, classifying outcomes, the measured file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onnxlint.probe.cases import build_cases
from onnxlint.probe.measure import measure
from onnxlint.probe.report import (
    Measurement,
    ProbeCase,
    ProbeReport,
    load_measured,
    merge_remeasured,
    write_report,
)
from onnxlint.runtime.results import AssignedNode, NodeVerdict, SessionResult

ROOT = Path(__file__).resolve().parents[2]
QNN = "QNNExecutionProvider"
OV = "OpenVINOExecutionProvider"
CPU = "CPUExecutionProvider"


@pytest.fixture(scope="module")
def add_cases() -> list[ProbeCase]:
    return build_cases(ops=["Add"], max_opset=13, max_ir=8)


def test_cases_are_single_node_models_with_dtype_variants(add_cases: list[ProbeCase]) -> None:
    names = {c.name for c in add_cases}
    assert "test_add" in names
    assert all(len(c.model.graph.node) == 1 for c in add_cases)
    assert not any(n.endswith("_expanded") for n in names)
    variants = {c.variant for c in add_cases if c.variant}
    assert {"float16", "double", "int32", "int64"} <= variants
    double = next(c for c in add_cases if c.variant == "double")
    assert double.input_dtypes == ["double", "double"]


def test_models_above_the_runners_opset_are_restamped(add_cases: list[ProbeCase]) -> None:
    case = next(c for c in add_cases if c.name == "test_add")
    # Add-14 test case, valid as Add-13: measured at the revision ORT can load.
    assert case.opset_lowered_from == 14
    assert (case.opset, case.since_version) == (13, 13)
    assert case.model.ir_version <= 8
    # A type that only the newer revision allows cannot be restamped: kept as is.
    int8 = next(c for c in add_cases if c.name == "test_add_int8")
    assert (int8.opset, int8.opset_lowered_from) == (14, None)


def test_names_and_limit_filters(add_cases: list[ProbeCase]) -> None:
    picked = build_cases(ops=["Add"], names=["test_add_bcast", "nope"])
    assert [c.name for c in picked] == ["test_add_bcast"]
    assert len(build_cases(ops=["Add"], limit=2)) == 2


def _case(add_cases: list[ProbeCase]) -> ProbeCase:
    return next(c for c in add_cases if c.name == "test_add")


def _res(**kw: object) -> SessionResult:
    base: dict[str, object] = {"request_id": "test_add", "status": "ok", "provider": QNN}
    base.update(kw)
    return SessionResult(**base)  # type: ignore[arg-type]


def test_claimed_from_the_assignment(add_cases: list[ProbeCase]) -> None:
    res = _res(assignment=[AssignedNode("", "Add", "", QNN)], create_s=0.1)
    m = measure(_case(add_cases), res, QNN)
    assert (m.claimed, m.status, m.nodes_on_ep, m.create_s) == (True, "ok", 1, 0.1)


def test_refused_with_the_eps_reason(add_cases: list[ProbeCase]) -> None:
    res = _res(
        assignment=[AssignedNode("", "Add", "", CPU)],
        verdicts=[NodeVerdict("Add", "", 0, False, "Failed to add node.")],
    )
    m = measure(_case(add_cases), res, QNN)
    assert (m.claimed, m.reason) == (False, "Failed to add node.")


def test_claimed_then_failed_from_the_log(add_cases: list[ProbeCase]) -> None:
    res = _res(
        status="error",
        error="EPFail: [ONNXRuntimeError] : 11 : EP_FAIL : Failed to compose Qnn graph.",
        verdicts=[NodeVerdict("Add", "", 0, True, None)],
    )
    m = measure(_case(add_cases), res, QNN)
    assert (m.claimed, m.status) == (True, "session-error")
    assert "Failed to compose Qnn graph" in (m.error or "")


@pytest.mark.parametrize(
    ("provider", "error", "claimed", "status"),
    [
        (
            OV,
            "Fail: [ONNXRuntimeError] : 1 : FAIL : Exception during initialization: "
            "/onnxruntime/onnxruntime/core/providers/openvino/backends/basic_backend.cc:22 x",
            True,
            "session-error",
        ),
        (
            OV,
            "Fail: [ONNXRuntimeError] : 1 : FAIL : Exception during initialization: "
            "/onnxruntime_src/onnxruntime/core/providers/cpu/rnn/lstm_base.h:50 x",
            False,
            "session-error",
        ),
        (
            CPU,
            "NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
            "implementation for Add(14) node with name ''",
            False,
            "session-error",
        ),
        (
            CPU,
            "Fail: [ONNXRuntimeError] : 1 : FAIL : Load model from onnxlint-models-ab12/"
            "model-3.onnx failed: Unsupported model IR version: 14, max supported IR version: 13",
            None,
            "load-error",
        ),
        (CPU, "InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : bad", None, "load-error"),
    ],
)
def test_session_errors_are_classified(
    add_cases: list[ProbeCase], provider: str, error: str, claimed: bool | None, status: str
) -> None:
    m = measure(_case(add_cases), _res(status="error", error=error, provider=provider), provider)
    assert (m.claimed, m.status) == (claimed, status)
    # Machine-specific paths never reach the measured file.
    assert "/tmp/" not in (m.error or "") and "/onnxruntime_src/" not in (m.error or "")


def test_worker_failures_are_unknown_not_refused(add_cases: list[ProbeCase]) -> None:
    m = measure(_case(add_cases), _res(status="crash", error="worker killed by SIGSEGV"), QNN)
    assert (m.claimed, m.status) == (None, "crash")


def _report(*ms: Measurement) -> ProbeReport:
    return ProbeReport(
        ep="qnn",
        provider=QNN,
        options={"backend_type": "htp"},
        date="2026-11-29",
        versions={"onnxruntime": "1.31.1"},
        optimization="disabled",
        measurements=list(ms),
    )


def _m(name: str, claimed: bool | None, status: str = "ok", **kw: object) -> Measurement:
    return Measurement(
        name=name,
        op="Add",
        domain="",
        opset=14,
        since=14,
        dtypes=["float"],
        claimed=claimed,
        status=status,
        **kw,  # type: ignore[arg-type]
    )


def test_measured_file_round_trip(tmp_path: Path) -> None:
    report = _report(
        _m("a", True, create_s=0.2),
        _m("b", False, reason="Failed to add node."),
        _m("c", None, "timeout", error="no result within 120 s"),
    )
    path = tmp_path / "qnn.json"
    write_report(report, path)
    lines = path.read_text().splitlines()
    assert len(lines) == 5  # header, one line per case, closing
    data = load_measured(path)
    assert data["schema"] == "onnxlint-measured/1"
    assert data["summary"]["claimed"] == 1
    assert data["summary"]["refused"] == 1
    assert data["summary"]["statuses"] == {"ok": 2, "timeout": 1}
    back = ProbeReport.from_json(data)
    assert back.measurements == report.measurements


def test_remeasured_cases_replace_the_old_ones() -> None:
    report = _report(_m("a", True), _m("c", None, "timeout"))
    merged = merge_remeasured(report, _report(_m("c", False)))
    assert [(m.name, m.claimed) for m in merged.measurements] == [("a", True), ("c", False)]


@pytest.mark.slow
def test_probe_command_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "onnxlint", "probe", "--ep", "cpu", "--op", "Relu"),
            *("--no-variants", "-o", str(out), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["summary"]["models"] == summary["summary"]["claimed"] >= 1
    assert summary.get("agreement", 1.0) == 1.0
    data = load_measured(out)
    assert {c["op"] for c in data["cases"]} == {"Relu"}
    assert data["versions"]["onnxruntime"]

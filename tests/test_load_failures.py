"""An EP whose session fails at load assigns nothing: its fallback, partition and compile
findings are not reported, only the load failure (onnxlint.load_failures).

onnxruntime-openvino 1.24.1 ships an ONNX Runtime that loads ai.onnx up to opset 25, so
an opset-26 model fails on OpenVINO at load (measured, tests/partition: OL201 "shipped").
The report said so (OL201) and also that every node "falls back to CPU" (OL502) and that
OpenVINO runs none of them (OL604), which no session ever did.
"""

from __future__ import annotations

import json

import onnx
import pytest

import onnxlint
from onnxlint import engine
from onnxlint.diagnostics import Category
from onnxlint.load_failures import EVERY_EP, drop_consequences
from onnxlint.ort_versions import installed_limits
from onnxlint.render.partitions import verdict_lines

OV = "openvino-cpu"
QNN = "qnn-htp"


def opset26(nonzero: bool = False) -> onnx.ModelProto:
    """Relu -> Sigmoid -> Mul of float[1, 8] at opset 26; with a NonZero of the product,
    which QNN refuses (its output's shape is data-dependent)."""
    tail = "    z = NonZero(y)\n" if nonzero else ""
    outputs = "float[1,8] y, int64[2,N] z" if nonzero else "float[1,8] y"
    m = onnx.parser.parse_model(f"""\
<ir_version: 10, opset_import: ["" : 26]>
g (float[1,8] x) => ({outputs}) {{
    a = Relu(x)
    b = Sigmoid(a)
    y = Mul(b, x)
{tail}}}
""")
    for i, n in enumerate(m.graph.node):
        n.name = f"n{i}_{n.op_type.lower()}"
    return m


def _installed_loads_26() -> bool:
    found = installed_limits()
    return bool(found) and int(found["max_opset"]) >= 26


def _consequences(report: onnxlint.Report, ep: str) -> list[str]:
    return [
        d.code
        for d in report.diagnostics
        if d.ep == ep
        and d.category in (Category.EP_SUPPORT, Category.PARTITION)
        and not d.fails_load
    ]


def test_no_fallback_findings_for_an_ep_that_fails_at_load() -> None:
    report = onnxlint.lint(opset26(), eps=["openvino"], what_if=False)
    failures = report.load_failures()
    assert set(failures) & {OV, EVERY_EP}, report.diagnostics
    assert set(failures.values()) == {"OL201"}
    assert _consequences(report, OV) == []
    doc = json.loads(report.to_json())
    assert doc["files"][0]["load_failures"] == failures


def test_the_verdict_line_says_the_model_does_not_load() -> None:
    report = engine.lint(opset26(), eps=["openvino"], partition_summary=True, what_if=False)
    lines = verdict_lines(report)
    assert lines and all("no session, the model fails to load (OL201)" in x for x in lines)


def test_ignored_load_failure_brings_the_prediction_back() -> None:
    """With OL201 ignored the user asks what the session would do if it loaded."""
    report = onnxlint.lint(opset26(), eps=["openvino"], config={"ignore": ["OL201"]})
    assert report.load_failures() == {}
    assert _consequences(report, OV), report.diagnostics  # OL502, OL604


def test_another_eps_findings_stay() -> None:
    if not _installed_loads_26():
        pytest.skip("the installed onnxruntime refuses opset 26 itself: every EP fails")
    report = onnxlint.lint(opset26(nonzero=True), eps=["openvino", "qnn"], what_if=False)
    assert set(report.load_failures()) == {OV}
    assert _consequences(report, OV) == []
    assert _consequences(report, QNN), report.diagnostics


def test_a_failure_naming_no_ep_covers_every_ep() -> None:
    report = onnxlint.lint(opset26(nonzero=True), eps=["qnn"], what_if=False)
    before = [d for d in report.diagnostics if d.ep == QNN]
    assert before
    every = onnxlint.Diagnostic(
        code="OL201",
        rule="opset-too-new",
        category=Category.OPSET,
        severity=onnxlint.Severity.ERROR,
        message="ORT refuses the opset",
        message_id="default",
        fails_load=True,
    )
    kept = drop_consequences([every, *report.diagnostics])
    assert [d for d in kept if d.ep == QNN and d.category == Category.EP_SUPPORT] == []
    assert every in kept

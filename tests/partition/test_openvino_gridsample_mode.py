"""OpenVINO claims a GridSample and then fails to read the model when the node's mode is
one of the names opset 20 gave the interpolation modes: its ONNX frontend maps the mode
string onto ``op::v9::GridSample::InterpolationMode``, which knows only opset 16's
``bilinear``, ``bicubic`` and ``nearest`` ('"linear" is not a member of enum
op::v9::GridSample::InterpolationMode'). From opset 20 ``linear`` is also the default,
and torch's dynamo exporter writes ``mode="linear"`` (RT-DETR's multi-scale deformable
attention, seventeenth held-out batch: hf17-rt_detr-dynamo-op20-fixed,
``node_GridSample_1554``). The profile says so with an ``attribute`` constraint on
revisions 20 and later whose effect is ``fails_after_claim`` (provenance
ov-gridsample-mode-names); OL506 reports it.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels.
"""

from __future__ import annotations

import onnx
import pytest

from onnxlint import lint

from .conftest import openvino_runner, real_sessions

_MODEL = """\
<ir_version: 10, opset_import: ["" : {opset}]>
g (float[1,2,4,4] x, float[1,3,3,2] grid) => (float[1,2,3,3] y) {{
    a = Relu(x)
    s = GridSample {attrs} (a, grid)
    y = Relu(s)
}}
"""

#: name -> (opset, mode attribute or None, whether the session fails)
CASES: dict[str, tuple[int, str | None, bool]] = {
    "op16_bilinear": (16, "bilinear", False),
    "op16_default": (16, None, False),
    "op16_bicubic": (16, "bicubic", False),
    "op20_linear": (20, "linear", True),
    "op20_cubic": (20, "cubic", True),
    "op20_nearest": (20, "nearest", False),
    "op20_default": (20, None, True),  # the default is linear
    "op22_linear": (22, "linear", True),
}


def model(case: str) -> onnx.ModelProto:
    opset, mode, _ = CASES[case]
    attrs = f'<mode = "{mode}", align_corners = 0>' if mode else "<align_corners = 0>"
    return onnx.parser.parse_model(_MODEL.format(opset=opset, attrs=attrs))


def _errors(m: onnx.ModelProto) -> list[tuple[str, str | None]]:
    report = lint(m, eps=["openvino"], what_if=False)
    return [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]


@pytest.mark.parametrize("case", CASES)
def test_gridsample_mode_names_of_opset_20_fail(case: str) -> None:
    errors = _errors(model(case))
    fails = CASES[case][-1]
    assert bool(errors) is fails, (case, errors)
    if fails:
        assert [code for code, _ in errors] == ["OL506"], errors


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_gridsample_mode_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {c: model(c) for c in CASES})
    for case, (*_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            assert (not r.get("ok")) is fails, (case, level, r)

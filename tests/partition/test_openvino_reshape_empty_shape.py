"""OpenVINO refuses a Reshape whose target shape is an empty tensor (a reshape to a
scalar): the EP's op table rejects a Reshape whose shape input has a dimension of value 0.
paddle2onnx 2.1.0 writes such Reshapes for the scalar that sizes an LSTM's zero initial
state (twentieth held-out batch: p2o20-paddle-lstm-op13-dynamic, ``Reshape.1`` and
``Reshape.4``), so they and the cluster around them run on the CPU. The profile says so
with a ``no_zero_dims`` constraint on input 1 (provenance ov-reshape-empty-shape).

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels.
"""

from __future__ import annotations

import onnx
import pytest

from .conftest import check_real, openvino_runner, partitions

_MODEL = """\
<ir_version: 8, opset_import: ["" : 13]>
g ({x_type} x) => ({y_type} y) {{
    a = Relu(x)
    {shape}
    b = Reshape(a, s)
    y = Relu(b)
}}
"""

#: name -> (input type, how the shape is given, whether OpenVINO takes the Reshape)
CASES: dict[str, tuple[str, str, bool]] = {
    "empty_init": ("float[1]", "", False),
    "empty_const": ("float[1]", "s = Constant <value = int64[0] {}> ()", False),
    "empty_dynamic": ("float[n]", "", False),
    "one_init": ("float[1]", "", True),
}


def model(case: str) -> onnx.ModelProto:
    x_type, shape, _ = CASES[case]
    one = case.startswith("one")
    y_type = "float[1]" if one else "float"  # an empty shape gives a scalar
    text = _MODEL.format(x_type=x_type, y_type=y_type, shape=shape)
    if not shape:
        dims = "int64[1] s = {1}" if one else "int64[0] s = {}"
        text = text.replace(f"=> ({y_type} y) {{", f"=> ({y_type} y) <{dims}> {{")
    m = onnx.parser.parse_model(text)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("case", CASES)
def test_reshape_with_an_empty_shape_runs_on_the_cpu(case: str) -> None:
    plan = partitions(model(case), ["openvino"]).plan("exported")
    assert plan is not None
    reshape = next(p for p, _ in plan.node_ep.items() if "Reshape" in p)
    taken = plan.node_ep[reshape] == "OpenVINOExecutionProvider"
    assert taken is CASES[case][-1], (case, plan.node_ep)


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_reshape_with_an_empty_shape_on_real_openvino() -> None:
    check_real("openvino", str(openvino_runner()), {c: model(c) for c in CASES})

"""QNN HTP takes a quantized Conv (DequantizeLinear -> Conv -> QuantizeLinear) whose
activation DequantizeLinear has per-channel scales in its capability pass, and then fails
to add it to the QNN graph ("QNN.graphAddNode() failed for node ... of type
DepthWiseConv2d with error code 1000"; session creation: "Failed to compose Qnn graph").
NNCF writes such per-channel activation quantizers (the sixteenth held-out batch:
MobileNetV2's depthwise Convs). Plain and depthwise Convs fail alike; with a per-tensor
activation scale both load. OL513 reports the DequantizeLinear
(``partitioning.finalize_failures``, a chain link with ``per_axis_scale``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import assert_real_failures

C = 8


def model(scale: str, depthwise: bool) -> onnx.ModelProto:
    """x -> Q -> DQ (activation; ``scale``: ``per_channel`` on axis 1 or ``per_tensor``) ->
    Conv 3x3 (int8 per-channel weight; ``depthwise``: group C) -> Q -> DQ -> y."""
    rng = np.random.default_rng(0)
    if scale == "per_channel":
        s, z, attrs = np.full((C,), 0.02, np.float32), np.zeros((C,), np.uint8), {"axis": 1}
    else:
        s, z, attrs = np.array(0.02, np.float32), np.array(0, np.uint8), {}
    cin = 1 if depthwise else C
    w = rng.integers(-50, 50, (C, cin, 3, 3)).astype(np.int8)
    inits = [
        numpy_helper.from_array(s, "s"), numpy_helper.from_array(z, "z"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.full((C,), 0.01, np.float32), "ws"),
        numpy_helper.from_array(np.zeros((C,), np.int8), "wz"),
        numpy_helper.from_array(np.array(0.05, np.float32), "os"),
        numpy_helper.from_array(np.array(0, np.uint8), "oz"),
    ]  # fmt: skip
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "xq", **attrs),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "xdq", **attrs),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], "wdq", axis=0),
        helper.make_node(
            "Conv", ["xd", "wd"], ["c"], "conv", pads=[1, 1, 1, 1], group=C if depthwise else 1
        ),
        helper.make_node("QuantizeLinear", ["c", "os", "oz"], ["cq"], "cq"),
        helper.make_node("DequantizeLinear", ["cq", "os", "oz"], ["y"], "cdq"),
    ]
    graph = helper.make_graph(
        nodes,
        f"conv_{scale}_{'dw' if depthwise else 'full'}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


MODELS = {
    f"{scale}-{kind}": (scale, kind == "dw")
    for scale in ("per_channel", "per_tensor")
    for kind in ("dw", "full")
}


@pytest.mark.parametrize("name", list(MODELS))
def test_a_per_channel_activation_conv_fails_to_compile(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    scale, depthwise = MODELS[name]
    found = [d for d in lint(model(scale, depthwise), eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert bool(found) is (scale == "per_channel"), found
    if found:
        assert found[0].location.node_path == "main/xdq"
        assert "DequantizeLinear -> Conv" in found[0].message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_per_channel_activation_conv_on_real_qnn(qnn_available: None) -> None:
    models = {k: model(*v) for k, v in MODELS.items()}
    fails = {k: v[0] == "per_channel" for k, v in MODELS.items()}
    assert_real_failures("qnn", sys.executable, models, fails)

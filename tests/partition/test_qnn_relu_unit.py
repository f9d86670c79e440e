"""A Relu between a quantized Conv and its output QuantizeLinear joins the Conv's QDQ node
unit when the QuantizeLinear clips at zero as the Relu does: every zero point is the
quantized type's lowest value (ORT's IsClipMadeRedundantByQ). QNN's selectors take a
per-channel zero point too when each element is that value: NNCF writes such per-channel
activation quantizers (held-out batch 16's ShuffleNetV2, where the Conv's weight and bias
DequantizeLinears and the QuantizeLinear ran on HTP at the default level and onnxlint
predicted the CPU). With one element above the minimum, or no zero point input, the
Relu stays outside and the Conv's per-channel weight DequantizeLinear, then standalone,
stays on the CPU.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) at both levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
C = 8


def conv_relu_q(per_channel: bool, zero_point: int | None) -> onnx.ModelProto:
    """Q/DQ of float[1, 4, 8, 8] -> Conv (uint8 per-channel weight, int32 bias) -> Relu ->
    QuantizeLinear (uint8; ``per_channel`` scales on axis 1; ``zero_point`` for every
    element, None: no zero point input) -> DequantizeLinear -> Sigmoid."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(rng.integers(0, 255, (C, 4, 3, 3)).astype(np.uint8), "wq"),
        numpy_helper.from_array(np.full((C,), 0.01, np.float32), "ws"),
        numpy_helper.from_array(np.full((C,), 128, np.uint8), "wz"),
        numpy_helper.from_array(np.zeros((C,), np.int32), "bq"),
        numpy_helper.from_array(np.full((C,), 0.0002, np.float32), "bs"),
    ]
    shape = (C,) if per_channel else ()
    scale = np.linspace(0.01, 0.05, C) if per_channel else 0.03
    inits.append(numpy_helper.from_array(np.asarray(scale, np.float32).reshape(shape), "ys"))
    q_in = ["r", "ys"]
    if zero_point is not None:
        inits.append(numpy_helper.from_array(np.full(shape, zero_point, np.uint8), "yz"))
        q_in.append("yz")
    axis = {"axis": 1} if per_channel else {}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], "x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], "x_dq"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], "w_dq", axis=0),
        helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], "b_dq", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], "relu"),
        helper.make_node("QuantizeLinear", q_in, ["rq"], "y_q", **axis),
        helper.make_node("DequantizeLinear", ["rq", *q_in[1:]], ["rd"], "y_dq", **axis),
        helper.make_node("Sigmoid", ["rd"], ["y"], "sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_relu_q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


CASES = {
    "per_channel_zero_at_min": (conv_relu_q(True, 0), True),
    "per_channel_zero_above_min": (conv_relu_q(True, 7), False),
    "per_channel_no_zero_point": (conv_relu_q(True, None), False),
    "per_tensor_zero_at_min": (conv_relu_q(False, 0), True),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_relu_joins_the_unit_when_the_quantizer_clips_at_zero(case: str, level: str) -> None:
    model, joins = CASES[case]
    plan = partitions(model, ["qnn"]).plan(level)
    assert plan is not None
    unit = ("main/w_dq", "main/b_dq", "main/conv", "main/relu", "main/y_q")
    if joins:
        assert {plan.node_ep[p] for p in unit} == {QNN}, plan.node_ep
    else:
        assert plan.node_ep["main/w_dq"] == CPU_EP, plan.node_ep


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_relu_units_on_real_qnn(qnn_available: None) -> None:
    check_real("qnn", sys.executable, {k: m for k, (m, _) in CASES.items()})

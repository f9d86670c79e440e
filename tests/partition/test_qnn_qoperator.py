"""QNN HTP takes the QOperator QLinearConv (issue #16, third held-out batch: the QOperator
MobileNetV2 and ViT of ``onnxruntime.quantization.quantize_static``), although the op
builder factory read for the profile has no builder for it: onnxruntime-qnn 2.7.0 has
one, which needs constant scales, zero points, weight and bias.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
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


def qlinear_conv(weight: str = "constant") -> onnx.ModelProto:
    """Relu -> QuantizeLinear -> QLinearConv (uint8 activations, int8 weights, int32 bias)
    -> DequantizeLinear -> Relu. ``weight``: ``constant`` (per tensor), ``per_channel``,
    or ``computed`` (a Neg of the initializer)."""
    rng = np.random.default_rng(0)
    per_channel = weight == "per_channel"
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(rng.integers(-50, 50, (4, 2, 3, 3)).astype(np.int8), "w"),
        numpy_helper.from_array(
            np.full(4, 0.01, np.float32) if per_channel else np.array(0.01, np.float32), "ws"
        ),
        numpy_helper.from_array(
            np.zeros(4, np.int8) if per_channel else np.array(0, np.int8), "wz"
        ),
        numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
        numpy_helper.from_array(np.array(128, np.uint8), "yz"),
        numpy_helper.from_array(np.arange(4).astype(np.int32), "b"),
    ]
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], "pre"),
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], "q"),
    ]
    w = "w"
    if weight == "computed":
        nodes.append(helper.make_node("Neg", ["w"], ["wn"], "neg_w"))
        w = "wn"
    nodes += [
        helper.make_node(
            "QLinearConv",
            ["xq", "xs", "xz", w, "ws", "wz", "ys", "yz", "b"],
            ["yq"],
            "qconv",
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["yd"], "dq"),
        helper.make_node("Relu", ["yd"], ["y"], "post"),
    ]
    graph = helper.make_graph(
        nodes,
        f"qlinearconv_{weight}",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("weight", ["constant", "per_channel"])
def test_qlinearconv_with_constant_weights_is_claimed(weight: str) -> None:
    plan = partitions(qlinear_conv(weight), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/qconv"] == QNN
    assert len(plan.partitions_on(QNN)) == 1


def test_qlinearconv_with_a_computed_weight_stays_on_cpu() -> None:
    plan = partitions(qlinear_conv("computed"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/qconv"] == CPU_EP


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qlinearconv_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {k: qlinear_conv(k) for k in ("constant", "per_channel", "computed")}
    check_real("qnn", sys.executable, models)

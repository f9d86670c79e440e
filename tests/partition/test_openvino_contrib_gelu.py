"""OpenVINO takes a ``com.microsoft`` Gelu: the EP looks its op list up by op type (as it
does for the ``com.microsoft`` QuantizeLinear and DequantizeLinear), finds the ai.onnx
Gelu there, and its ONNX frontend translates the contrib op. ORT's transformer optimizer
writes one where its Gelu fusion leaves the bias apart (a BERT-type model whose dense
layers became Gemms, quantized afterwards: held-out batch 7's ``qdq-ortopt-roberta-qdq8``,
two Gelus that were predicted on the CPU, each a partition cut). A ``com.microsoft``
FastGelu has no ai.onnx namesake in the list and stays on the CPU.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU), both graph levels.
"""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from .conftest import check_real, openvino_runner, partitions

SHAPE = [2, 4, 8]


def contrib_gelu(op: str) -> onnx.ModelProto:
    """Relu -> com.microsoft ``op`` -> Relu."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], "pre"),
        helper.make_node(op, ["a"], ["g"], "gelu", domain="com.microsoft"),
        helper.make_node("Relu", ["g"], ["y"], "post"),
    ]
    graph = helper.make_graph(
        nodes,
        f"contrib_{op.lower()}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 8
    return model


#: op -> (the contrib node's EP, the number of OpenVINO partitions)
CASES = {
    "Gelu": ("OpenVINOExecutionProvider", 1),
    "FastGelu": ("CPUExecutionProvider", 1),  # the last Relu: OpenVINO keeps that cluster
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_contrib_gelu_prediction(op: str) -> None:
    plan = partitions(contrib_gelu(op), ["openvino"]).plan("exported")
    assert plan is not None
    ep, count = CASES[op]
    assert plan.node_ep["main/gelu"] == ep
    assert len(plan.partitions_on("OpenVINOExecutionProvider")) == count


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_contrib_gelu_on_real_openvino() -> None:
    check_real("openvino", str(openvino_runner()), {op: contrib_gelu(op) for op in CASES})

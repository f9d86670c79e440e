"""QNN HTP adds the 8-bit output of a Squeeze or Reshape outside any QDQ unit as a plain
integer tensor, and refuses the node when its input is quantized (a QuantizeLinear wrote
it); the QDQ unit whose DequantizeLinear reads that output then fails to be added too,
every node of it ("Failed to add fused Matmul node." for a MatMul's unit). tf2onnx writes
this where it converts an int8 TFLite classifier (the fourteenth held-out batch):
GlobalAveragePool -> QuantizeLinear -> Squeeze -> DequantizeLinear -> MatMul ->
QuantizeLinear, the head of MobileNetV2 (``partitioning.integer_tensor_registration``:
Squeeze among ``refused_on_quantized_input``, ``unit_reason``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def model(op: str = "Squeeze", head: str = "MatMul") -> onnx.ModelProto:
    """x [1, 16, 1, 1] -> Relu -> QuantizeLinear -> ``op`` to [1, 16] -> DequantizeLinear
    -> ``head`` (MatMul by a quantized [16, 10] weight, or Sigmoid) -> QuantizeLinear ->
    DequantizeLinear."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(0, np.int8), "zp"),
        numpy_helper.from_array(rng.integers(-100, 100, (16, 10)).astype(np.int8), "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
        numpy_helper.from_array(np.array([1, 16], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"], "relu"),
        helper.make_node("QuantizeLinear", ["xr", "s", "zp"], ["xq"], "q_x"),
        helper.make_node(op, ["xq", "axes" if op == "Squeeze" else "shape"], ["sq"], "squeeze"),
        helper.make_node("DequantizeLinear", ["sq", "s", "zp"], ["sd"], "dq_sq"),
    ]
    if head == "MatMul":
        nodes += [
            helper.make_node("DequantizeLinear", ["w", "ws", "zp"], ["wd"], "dq_w"),
            helper.make_node("MatMul", ["sd", "wd"], ["y"], "head"),
        ]
    else:
        nodes.append(helper.make_node(head, ["sd"], ["y"], "head"))
    nodes += [
        helper.make_node("QuantizeLinear", ["y", "s", "zp"], ["yq"], "q_y"),
        helper.make_node("DequantizeLinear", ["yq", "s", "zp"], ["out"], "dq_out"),
    ]
    graph = helper.make_graph(
        nodes,
        "plain_tensor_unit",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 1, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


MODELS = {
    "squeeze_matmul": model(),
    "reshape_matmul": model("Reshape"),
    "squeeze_sigmoid": model(head="Sigmoid"),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_unit_after_a_refused_plain_tensor_runs_on_the_cpu(name: str) -> None:
    for level in ("exported", "optimized"):
        plan = partitions(MODELS[name], ["qnn"]).plan(level)
        assert plan is not None
        on_qnn = sorted(p.split("/", 1)[1] for p, ep in plan.node_ep.items() if ep == QNN)
        assert on_qnn == ["q_x", "relu"], (name, level, on_qnn)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_plain_tensor_unit_on_real_qnn(qnn_available: None) -> None:
    check_real("qnn", sys.executable, MODELS)

"""QNN HTP takes a DynamicQuantizeLinear together with the one DequantizeLinear that reads
its three outputs (quantized tensor, scale, zero point), though it refuses each alone (no
DynamicQuantizeLinear builder; a DequantizeLinear with a computed scale), before a MatMul
or any other op, every shape static. tf2onnx writes the pair before each MatMul of a
dynamic-range quantized TFLite model (the fourteenth held-out batch); the profile lists the
``dynamic_quantize_dequantize`` fusion.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.partition import Partitions

from .conftest import check_real, context, partitions

QNN = "QNNExecutionProvider"


def model(head: str = "MatMul", batch: int | str = 1) -> onnx.ModelProto:
    """x [batch, 16] -> Relu -> DynamicQuantizeLinear -> DequantizeLinear -> ``head``
    (MatMul by a quantized [16, 10] weight, or Sigmoid) -> Relu."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(-100, 100, (16, 10)).astype(np.int8), "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wzp"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"], "relu"),
        helper.make_node("DynamicQuantizeLinear", ["xr"], ["xq", "xs", "xz"], "dql"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], "dq_x"),
    ]
    if head == "MatMul":
        nodes += [
            helper.make_node("DequantizeLinear", ["w", "ws", "wzp"], ["wd"], "dq_w"),
            helper.make_node("MatMul", ["xd", "wd"], ["y"], "head"),
        ]
    else:
        nodes.append(helper.make_node(head, ["xd"], ["y"], "head"))
    nodes.append(helper.make_node("Relu", ["y"], ["out"], "relu_out"))
    graph = helper.make_graph(
        nodes,
        "dql_dequantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


#: name -> (model, whether QNN takes the DynamicQuantizeLinear and its DequantizeLinear)
CASES = {
    "matmul": (model(), True),
    "sigmoid": (model("Sigmoid"), True),
    "dynamic_batch": (model(batch="N"), False),
}


def _on_qnn(m: onnx.ModelProto) -> set[str]:
    plan = partitions(m, ["qnn"]).plan("exported")
    assert plan is not None
    return {p.split("/", 1)[1] for p, ep in plan.node_ep.items() if ep == QNN}


@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_quantize_with_its_dequantize_is_taken(name: str) -> None:
    m, taken = CASES[name]
    on = _on_qnn(m)
    assert ({"dql", "dq_x"} <= on) is taken, on
    assert ("dql" in on) is ("dq_x" in on)


def test_the_fusion_comes_from_the_profile() -> None:
    ctx = context(model(), ["qnn"])
    ctx.eps = [
        dataclasses.replace(p, fusions=p.fusions - {"dynamic_quantize_dequantize"})
        if p.ep == QNN
        else p
        for p in ctx.eps
    ]
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dql"] != QNN
    assert plan.node_ep["main/dq_x"] != QNN


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_dynamic_quantize_dequantize_on_real_qnn(qnn_available: None) -> None:
    check_real("qnn", sys.executable, {k: m for k, (m, _) in CASES.items()})

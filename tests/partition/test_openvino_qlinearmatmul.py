"""OpenVINO's CPU device leaves every QLinearMatMul to the CPU EP, although the EP's op
list names the op: uint8 or int8 inputs and output, a constant or a computed B, ranks 2
to 4, revisions 10 and 21 (issue #16, third held-out batch: the QOperator ViT's
attention QLinearMatMuls, both inputs computed, were predicted on OpenVINO). The
QuantizeLinear and DequantizeLinear around it run on OpenVINO. The openvino-cpu profile
no longer lists the op.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, openvino_runner, partitions

OV = "OpenVINOExecutionProvider"
U8, S8 = TensorProto.UINT8, TensorProto.INT8
NP = {U8: np.uint8, S8: np.int8}

#: name -> (element type of A, of B, of the output, constant B, rank, opset)
CASES = {
    "u8s8u8_const": (U8, S8, U8, True, 3, 17),
    "u8u8u8_computed": (U8, U8, U8, False, 4, 17),
    "s8s8s8_computed": (S8, S8, S8, False, 2, 17),
    "u8s8u8_const_op21": (U8, S8, U8, True, 3, 21),
}


def qlinear_matmul(a_t: int, b_t: int, y_t: int, const_b: bool, rank: int, opset: int):
    """Relu -> QuantizeLinear -> QLinearMatMul -> DequantizeLinear -> Relu; B a constant
    or a second Relu -> QuantizeLinear."""
    lead = [1, 2, 8][: rank - 2]
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(0, NP[a_t]), "za"),
        numpy_helper.from_array(np.array(0, NP[b_t]), "zb"),
        numpy_helper.from_array(np.array(0, NP[y_t]), "zy"),
    ]
    nodes = [
        helper.make_node("Relu", ["a0"], ["a"], "pre_a"),
        helper.make_node("QuantizeLinear", ["a", "s", "za"], ["aq"], "qa"),
    ]
    inputs = [helper.make_tensor_value_info("a0", TensorProto.FLOAT, [*lead, 8, 4])]
    if const_b:
        b = np.random.default_rng(0).integers(0, 100, [*lead, 4, 8]).astype(NP[b_t])
        inits.append(numpy_helper.from_array(b, "bq"))
    else:
        nodes += [
            helper.make_node("Relu", ["b0"], ["b"], "pre_b"),
            helper.make_node("QuantizeLinear", ["b", "s", "zb"], ["bq"], "qb"),
        ]
        inputs.append(helper.make_tensor_value_info("b0", TensorProto.FLOAT, [*lead, 4, 8]))
    nodes += [
        helper.make_node(
            "QLinearMatMul", ["aq", "s", "za", "bq", "s", "zb", "s", "zy"], ["m"], "qlmm"
        ),
        helper.make_node("DequantizeLinear", ["m", "s", "zy"], ["d"], "dq"),
        helper.make_node("Relu", ["d"], ["y"], "post"),
    ]
    graph = helper.make_graph(
        nodes,
        "qlinear_matmul",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*lead, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize(("case", "spec"), CASES.items())
def test_qlinear_matmul_stays_on_the_cpu(case: str, spec: tuple) -> None:
    plan = partitions(qlinear_matmul(*spec), ["openvino"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/qlmm"] == CPU_EP, case
    assert plan.node_ep["main/qa"] == OV, case


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_qlinear_matmul_on_real_openvino() -> None:
    runner = str(openvino_runner())
    check_real("openvino", runner, {c: qlinear_matmul(*v) for c, v in CASES.items()})

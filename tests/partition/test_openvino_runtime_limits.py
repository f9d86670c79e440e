"""onnxruntime-openvino ships its own ONNX Runtime (1.24.1), which loads ai.onnx up to opset
25 and IR version 13 (``rules/ort_versions.json``); the installed onnxruntime 1.32 loads
opset 28 and IR 14. A model above the shipped limits loads on the CPU and on QNN and fails
on OpenVINO at load, at every level ("Current official support for domain ai.onnx is till
opset 25", "Unsupported model IR version"): OL201 and OL202 say so for the OpenVINO profiles
(``runtime_onnxruntime``). Measured with onnxruntime-openvino 1.24.1 (CPU), both levels.
"""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from .conftest import openvino_runner, real_sessions


def relu(opset: int, ir: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], "r")],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


#: name -> (model, whether onnxruntime-openvino 1.24.1 loads it)
MODELS = {
    "opset25_ir13": (relu(25, 13), True),
    "opset26": (relu(26, 10), False),
    "ir14": (relu(25, 14), False),
}


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_the_shipped_release_limits_on_real_openvino() -> None:
    real = real_sessions("openvino", str(openvino_runner()), {n: m for n, (m, _) in MODELS.items()})
    for name, (_, loads) in MODELS.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert bool(r.get("ok")) == loads, (name, level, r.get("error"))

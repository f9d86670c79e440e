"""OpenVINO claims a ``com.microsoft`` SkipLayerNormalization and then fails to compile it
when the node asks for more than its first output: the frontend's translation has one
output ("Expected output number of SkipLayerNormalization node is 4 while the
implementation provides 1"; issue #16, third held-out batch: ORT's transformer optimizer
writes the input+skip sum as output 3 for the next SkipLayerNormalization to read, in
GPT-2, ViT and CLIP). The profile says so with an ``output_absent`` constraint whose
effect is ``fails_after_claim``; OL506 reports it.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import openvino_runner, real_sessions

HIDDEN = 8


def skip_layer_norm(outputs: str) -> onnx.ModelProto:
    """Relu -> com.microsoft SkipLayerNormalization -> Relu. ``outputs``: ``y`` (output 0
    only), ``y_mean`` (outputs 0 and 1) or ``y_sum`` (outputs 0 and 3, as ORT's optimizer
    writes it)."""
    names = {"y": ["y"], "y_mean": ["y", "extra"], "y_sum": ["y", "", "", "extra"]}[outputs]
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], "pre"),
        helper.make_node(
            "SkipLayerNormalization",
            ["x", "skip", "gamma", "beta"],
            names,
            "sln",
            domain="com.microsoft",
            epsilon=1e-5,
        ),
        helper.make_node("Relu", ["y"], ["out"], "post"),
    ]
    shape = [2, 4, HIDDEN]
    graph_outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)]
    if outputs != "y":
        nodes.append(helper.make_node("Relu", ["extra"], ["out2"], "post2"))
        extra = [2, 4, 1] if outputs == "y_mean" else shape  # the mean, or the sum
        graph_outputs.append(helper.make_tensor_value_info("out2", TensorProto.FLOAT, extra))
    graph = helper.make_graph(
        nodes,
        f"skip_layer_norm_{outputs}",
        [
            helper.make_tensor_value_info("x0", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("skip", TensorProto.FLOAT, shape),
        ],
        graph_outputs,
        [
            numpy_helper.from_array(np.ones(HIDDEN, np.float32), "gamma"),
            numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "beta"),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 8
    return model


CASES = {"y": False, "y_mean": True, "y_sum": True}


@pytest.mark.parametrize(("outputs", "fails"), CASES.items())
def test_extra_outputs_fail_after_the_claim(outputs: str, fails: bool) -> None:
    report = lint(skip_layer_norm(outputs), eps=["openvino"], what_if=False)
    errors = [d for d in report.diagnostics if d.severity.name == "ERROR"]
    assert [(d.code, d.location.node_name) for d in errors] == (
        [("OL506", "sln")] if fails else []
    ), [d.message for d in errors]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_extra_outputs_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {k: skip_layer_norm(k) for k in CASES})
    for outputs, fails in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{outputs}|{level}"]
            assert (not r.get("ok")) is fails, (outputs, level, r)

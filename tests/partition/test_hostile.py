"""Bad or hostile models never crash the partition analysis (no OL099 from OL5xx/OL6xx)."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

import onnxlint


def _cycle() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _huge_dims() -> onnx.ModelProto:
    big = 1 << 62
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="r0"),
        helper.make_node("Erf", ["a"], ["b"], name="e0"),
        helper.make_node("Relu", ["b"], ["y"], name="r1"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [big, big, big])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [big, big, big])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _empty() -> onnx.ModelProto:
    g = helper.make_graph([], "g", [], [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _dangling() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["missing"], ["y"], name="r")]
    g = helper.make_graph(
        nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _unknown_op_and_string_types() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Frobnicate", ["x"], ["a"], name="f", domain="zz"),
        helper.make_node("Identity", ["a"], ["y"], name="i"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, None)],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
    )
    return helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("zz", 1)],
        ir_version=8,
    )


@pytest.mark.parametrize(
    "build", [_cycle, _huge_dims, _empty, _dangling, _unknown_op_and_string_types]
)
@pytest.mark.parametrize("eps", [["qnn"], ["openvino"], ["cuda"], ["tensorrt", "cuda"]])
def test_no_internal_errors(build, eps) -> None:
    report = onnxlint.lint(build(), eps=eps)
    internal = [
        d
        for d in report.diagnostics
        if d.code == "OL099" and any(f"OL{c}" in d.message for c in "56")
    ]
    assert internal == [], onnxlint.render(report)
    assert "partition_error" not in report.stats
    for plan in report.partitions:
        for ep in plan.accelerators:
            assert len(plan.verdict_line(ep)) < 300

"""OpenVINO claims a blocked DequantizeLinear and then fails to compile the model when the
input's dimension on the blocked axis is not a multiple of ``block_size`` (its ONNX
frontend: "DequantizeLinear doesn't support case when dimension of X cannot be divided by
block_size"; issue #16, third held-out batch: nbits-qwen2-qdq, the int4 QDQ form of
MatMulNBits, whose MLP down projection has 37 rows). The profile says so with a
``multiple_of`` constraint on input 0 whose effect is ``fails_after_claim``; OL506
reports it. The constraint reads a dimension's size, which the verdict memo otherwise
keys as one: two DequantizeLinears that differ only in that size get their own verdicts.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import openvino_runner, real_sessions

#: name -> (rows, columns, axis, element type, whether the session fails)
CASES = {
    "k64_axis0": (64, 32, 0, TensorProto.INT4, False),
    "k37_axis0": (37, 32, 0, TensorProto.INT4, True),
    "k37_axis_neg2": (37, 32, -2, TensorProto.INT4, True),
    "k37_axis0_int8": (37, 32, 0, TensorProto.INT8, True),
    "n37_axis1": (32, 37, 1, TensorProto.INT4, True),
}
BLOCK = 32


def _dq(name: str, rows: int, cols: int, axis: int, elem: int) -> tuple[onnx.NodeProto, list]:
    rng = np.random.default_rng(0)
    weight = helper.make_tensor(
        f"{name}_w", elem, [rows, cols], rng.integers(-8, 8, rows * cols).tolist()
    )
    blocked = [rows, cols]
    blocked[axis % 2] = -(-blocked[axis % 2] // BLOCK)
    scale = numpy_helper.from_array(np.full(blocked, 0.01, np.float32), f"{name}_s")
    node = helper.make_node(
        "DequantizeLinear", [f"{name}_w", f"{name}_s"], [f"{name}_wd"], name,
        axis=axis, block_size=BLOCK,
    )  # fmt: skip
    return node, [weight, scale]


def dq_matmul(rows: int, cols: int, axis: int, elem: int) -> onnx.ModelProto:
    """Relu -> MatMul(x, DequantizeLinear(constant weight, blocked scales)) -> Relu."""
    dq, inits = _dq("dq", rows, cols, axis, elem)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            dq,
            helper.make_node("MatMul", ["x", "dq_wd"], ["m"], "mm"),
            helper.make_node("Relu", ["m"], ["y"], "post"),
        ],
        "dq_block_size",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [4, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, cols])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _errors(model: onnx.ModelProto) -> list[tuple[str, str | None]]:
    report = lint(model, eps=["openvino"], what_if=False)
    return [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]


@pytest.mark.parametrize(("case", "spec"), CASES.items())
def test_a_blocked_dimension_not_a_multiple_of_block_size_fails(case: str, spec: tuple) -> None:
    *shape, fails = spec
    assert _errors(dq_matmul(*shape)) == ([("OL506", "dq")] if fails else []), case


def test_sizes_set_two_dequantize_linears_apart() -> None:
    """Two DequantizeLinears alike but for the blocked dimension (64 and 37 rows, read by
    two MatMuls): only the second fails."""
    ok, ok_inits = _dq("dq64", 64, 32, 0, TensorProto.INT4)
    bad, bad_inits = _dq("dq37", 37, 32, 0, TensorProto.INT4)
    graph = helper.make_graph(
        [
            ok,
            bad,
            helper.make_node("MatMul", ["a", "dq64_wd"], ["ya"], "mm64"),
            helper.make_node("MatMul", ["b", "dq37_wd"], ["yb"], "mm37"),
        ],
        "two_dqs",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 64]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 37]),
        ],
        [
            helper.make_tensor_value_info("ya", TensorProto.FLOAT, [4, 32]),
            helper.make_tensor_value_info("yb", TensorProto.FLOAT, [4, 32]),
        ],
        ok_inits + bad_inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    assert _errors(model) == [("OL506", "dq37")]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_dq_block_size_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {k: dq_matmul(*v[:4]) for k, v in CASES.items()})
    for case, (*_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            assert (not r.get("ok")) is fails, (case, level, r)

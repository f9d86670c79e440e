"""QNN HTP claims a QuantizeLinear or DequantizeLinear whose scale is infinite or NaN, and
session creation then fails: on the op's output pair "QNN.graphAddNode() failed ...
error code 6007" / "Failed to compose Qnn graph", on its input DequantizeLinear "Failed
to finalize QNN graph" with a memory error. A finite scale, however large, loads.

The eighth held-out batch: WavLM quantized with ``get_qnn_qdq_config`` (uint16
activations, per-channel weights). Its relative-position bucket takes the Log of a Div
that is 0 on the diagonal; the calibration sees -inf and gives that Log's output a scale
of inf, which the quantizer writes into the model without a warning. The profile says so
as data (a ``finite_scale`` constraint with ``effect: fails_after_claim``, OL506).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), optimization levels disabled and basic.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import real_sessions


def qdq(op: str, bits: int, bad: float, where: str) -> onnx.ModelProto:
    """x -> Q -> DQ -> ``op`` -> Q -> DQ -> Relu -> Q -> DQ; the scale ``bad`` on the op's
    output pair (``where`` "out") or on its input pair ("in"), the others finite."""
    np_type = {8: np.uint8, 16: np.uint16}[bits]
    inits = [
        numpy_helper.from_array(np.array(0.01, np.float32), "s"),
        numpy_helper.from_array(np.array(0, np_type), "z"),
        numpy_helper.from_array(np.array(bad if where == "in" else 0.01, np.float32), "s_in"),
        numpy_helper.from_array(np.array(bad if where == "out" else 0.02, np.float32), "s_out"),
    ]
    op_inputs = ["xd", "xd"] if op == "Add" else ["xd"]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z"], ["xq"], "q_in"),
        helper.make_node("DequantizeLinear", ["xq", "s_in", "z"], ["xd"], "dq_in"),
        helper.make_node(op, op_inputs, ["y"], "op"),
        helper.make_node("QuantizeLinear", ["y", "s_out", "z"], ["yq"], "q_out"),
        helper.make_node("DequantizeLinear", ["yq", "s_out", "z"], ["yd"], "dq_out"),
        helper.make_node("Relu", ["yd"], ["r"], "relu"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], "q_r"),
        helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["out"], "dq_r"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


#: (op, activation bits, scale, where) -> the node OL506 names, None where the session loads
CASES: dict[tuple[str, int, float, str], str | None] = {
    ("Log", 16, float("inf"), "out"): "q_out",
    ("Log", 8, float("inf"), "out"): "q_out",
    ("Log", 16, float("nan"), "out"): "q_out",
    ("Add", 8, float("inf"), "out"): "q_out",
    ("Relu", 8, float("inf"), "in"): "dq_in",
    ("Log", 16, 3.0e38, "out"): None,
    ("Log", 16, 0.02, "out"): None,
}


def _key(case: tuple[str, int, float, str]) -> str:
    return "_".join(map(str, case)).replace(".", "p").replace("+", "")


@pytest.mark.parametrize(("case", "node"), list(CASES.items()), ids=[_key(case) for case in CASES])
def test_a_nonfinite_scale_fails_the_session(
    case: tuple[str, int, float, str], node: str | None
) -> None:
    found = [d for d in lint(qdq(*case), eps=["qnn"]).diagnostics if d.code == "OL506"]
    if node is None:
        assert found == []
    else:
        assert found, "OL506 expected"
        assert found[0].location.node_name == node, found[0]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_nonfinite_scale_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {_key(case): qdq(*case) for case in CASES})
    for case, node in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{_key(case)}|{level}"]
            assert (not r.get("ok")) is (node is not None), (case, level, r)
            if node is not None:
                assert "qnn graph" in str(r.get("error")).lower(), r

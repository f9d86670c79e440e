"""QNN claims a Reciprocal without checking its input shape: with a dynamic input the
node is taken and session creation then fails ("Dynamic shape is not supported yet";
issue #16, the tf2onnx LayerNorm of a shipped model whose value_info keeps symbolic
dims). Other unary ops with the same input are refused ("Cannot get shape") and fall
back to CPU. The profile says so as data: the global static-shape constraint skips
Reciprocal, whose own constraint has ``effect: fails_after_claim`` (OL506).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint import lint

from .conftest import agreement


def unary(op: str, dim: int | str) -> onnx.ModelProto:
    """Relu(x) -> ``op`` with x of shape [dim, 8], and a static Relu beside it."""
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], "relu"),
            helper.make_node(op, ["r"], ["y"], "op"),
            helper.make_node("Relu", ["x2"], ["y2"], "relu2"),
        ],
        "unary",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 8]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 8]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, 8]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 8]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: (op, first dim) -> whether the QNN session fails
CASES = {
    ("Reciprocal", "N"): True,
    ("Reciprocal", 1): False,
    ("Sqrt", "N"): False,
}


def _codes(model: onnx.ModelProto) -> set[str]:
    return {d.code for d in lint(model, eps=["qnn"]).diagnostics if d.severity.name == "ERROR"}


@pytest.mark.parametrize(("case", "fails"), list(CASES.items()))
def test_reciprocal_with_a_dynamic_input_fails_the_session(
    case: tuple[str, int | str], fails: bool
) -> None:
    assert ("OL506" in _codes(unary(*case))) is fails


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reciprocal_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    spec = agreement.EPS["qnn"]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for op, dim in CASES:
            path = Path(tmp) / f"{op}_{dim}.onnx"
            path.write_bytes(unary(op, dim).SerializeToString())
            jobs.append(
                {
                    "id": f"{op}_{dim}",
                    "path": str(path),
                    "level": "disabled",
                    "provider": spec["provider"],
                    "options": spec["options"],
                    "plugin": spec["plugin"],
                }
            )
        real = agreement.run_real(jobs, sys.executable, timeout_s=300)
    for (op, dim), fails in CASES.items():
        r = real[f"{op}_{dim}"]
        assert (not r.get("ok")) is fails, r
        if fails:
            assert "Dynamic shape is not supported yet" in str(r.get("error"))

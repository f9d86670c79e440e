"""ORT registers its own LayerNormalization in the ai.onnx domain from version 1 (it was a
contrib op before ONNX's opset 17), and ORT's transformer optimizer writes it into models
of any opset: optimum's ORTOptimizer O2/O3 of an opset-14 BERT (issue #16, held-out batch
10) has one per layer. ONNX's inference has no schema for it below opset 17, so its output
and everything computed from it had no shape: with the dims fixed QNN was predicted to
refuse the MatMuls downstream ("every tensor shape static") and OpenVINO to fail on a
subgraph input of unknown rank (OL509), where the real sessions take them and load.
``analyses.contrib_types`` now infers it as ORT's schema does (Y as X), and OL204, which
called it an operator that does not exist at the imported opset (an error: ORT was said to
fail to load it), warns instead: ORT loads it, other runtimes do not.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) and onnxruntime-openvino 1.24.1 (OpenVINO CPU).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import check_real, openvino_runner, qnn_cpu_nodes


def _model(opset: int) -> onnx.ModelProto:
    """x [1, 8, 16] -> LayerNormalization -> MatMul -> FastGelu (com.microsoft) -> MatMul
    -> Relu, as ORT's optimizer writes a BERT feed-forward block."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.ones(16, np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(16, np.float32), "beta"),
        numpy_helper.from_array(rng.standard_normal((16, 32)).astype("f4"), "w1"),
        numpy_helper.from_array(rng.standard_normal((32, 16)).astype("f4"), "w2"),
    ]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], "ln", axis=-1),
        helper.make_node("MatMul", ["n", "w1"], ["h"], "mm1"),
        helper.make_node("FastGelu", ["h"], ["g"], "gelu", domain="com.microsoft"),
        helper.make_node("MatMul", ["g", "w2"], ["o"], "mm2"),
        helper.make_node("Relu", ["o"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        f"ln_op{opset}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])],
        inits,
    )
    imports = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    return model


@pytest.mark.parametrize("opset", [14, 17])
def test_qnn_takes_what_follows_an_ort_layernorm(opset: int) -> None:
    on_cpu = qnn_cpu_nodes(_model(opset))
    # QNN has no FastGelu: it alone runs on the CPU, between two QNN partitions
    assert on_cpu == {"main/gelu"}, on_cpu


@pytest.mark.parametrize("opset", [14, 17])
def test_openvino_gets_a_known_rank_after_an_ort_layernorm(opset: int) -> None:
    report = lint(_model(opset), eps=["openvino"], what_if=False)
    errors = [d.code for d in report.diagnostics if d.severity.name == "ERROR"]
    assert "OL509" not in errors, errors


@pytest.mark.parametrize("ep", ["cpu", "qnn", "openvino"])
def test_an_ort_layernorm_below_17_is_no_session_failure(ep: str) -> None:
    """ORT loads it (its own schema and kernels, ai.onnx versions 1-16): OL204 warns that
    other runtimes do not, and nothing reports an error."""
    report = lint(_model(14), eps=[ep], what_if=False)
    errors = [d.code for d in report.diagnostics if d.severity.name == "ERROR"]
    assert errors == [], errors
    assert [d.severity.name for d in report.diagnostics if d.code == "OL204"] == ["WARNING"]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_ort_layernorm_below_17_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {f"op{o}": _model(o) for o in (14, 17)})


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_ort_layernorm_below_17_on_real_openvino() -> None:
    check_real("openvino", str(openvino_runner()), {f"op{o}": _model(o) for o in (14, 17)})


@pytest.mark.slow
@pytest.mark.parametrize("opset", [11, 14, 16])
def test_ort_layernorm_below_17_loads_and_runs_on_real_cpu(opset: int) -> None:
    ort = pytest.importorskip("onnxruntime")
    model = _model(opset)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.ones((1, 8, 16), np.float32)})
    assert y.shape == (1, 8, 16)

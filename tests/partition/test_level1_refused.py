"""ONNX Runtime refuses a graph its level-1 optimizations make: OL606 (the fifth held-out
batch: CANINE's TorchScript export, whose final character encoder multiplies a query and a
key of different lengths).

With optimizations disabled ORT cannot tell the shapes of a Reshape whose target shape is
computed from a ``Shape``, so the session loads and the MatMul after it fails when it
runs. At the basic level constant folding turns that shape into a constant, and ORT's
graph resolution then refuses the MatMul ("[ShapeInferenceError] Incompatible dimensions
for matrix multiplication") before any EP chooses a node: measured with the CPU, QNN HTP
and OpenVINO EPs, the session loads at ``disabled`` and fails at ``basic`` on each.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) and onnxruntime-openvino 1.24.1 (CPU).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import openvino_runner, real_sessions


def reshaped_matmul(inner: int) -> onnx.ModelProto:
    """x [1, 8] -> Relu -> Reshape to [Shape(x)[0], 2, 4] -> MatMul with a [inner, 3]
    weight: with ``inner`` 8 the MatMul's dimensions do not fit (4 against 8)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "relu"),
        helper.make_node("Shape", ["r"], ["s"], "shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], "gather", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"], "unsqueeze"),
        helper.make_node("Concat", ["b1", "tail"], ["target"], "concat", axis=0),
        helper.make_node("Reshape", ["r", "target"], ["y"], "reshape"),
        helper.make_node("MatMul", ["y", "w"], ["z"], "matmul"),
    ]
    inits = [
        numpy_helper.from_array(np.ones((inner, 3), np.float32), "w"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "axes"),
        numpy_helper.from_array(np.array([2, 4], np.int64), "tail"),
    ]
    graph = helper.make_graph(
        nodes,
        "reshaped_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: name -> (weight rows, whether the default-level session fails)
MODELS = {"misfit": (8, True), "fits": (4, False)}


@pytest.mark.parametrize("ep", ["cpu", "qnn", "openvino"])
@pytest.mark.parametrize("name", list(MODELS))
def test_a_refused_level1_graph_is_a_session_failure(
    name: str, ep: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    inner, fails = MODELS[name]
    found = [d for d in lint(reshaped_matmul(inner), eps=[ep]).diagnostics if d.code == "OL606"]
    assert bool(found) is fails, found
    if fails:
        assert "Node (matmul) Op (MatMul) [ShapeInferenceError]" in found[0].message
        assert found[0].severity.name == "ERROR"
        # the worker's session with every optimization disabled loads (measured below)
        assert found[0].message_id == "default", found[0].message
        assert "at the default optimization level" in found[0].message


def test_a_refusal_without_an_inference_error_is_not_reported() -> None:
    from onnxlint.analyses.level1 import inference_error

    assert inference_error("") is None
    missing = "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation"
    assert inference_error(missing) is None
    resolve = "Fail: [ONNXRuntimeError] : 1 : FAIL : Node (m) Op (MatMul) [ShapeInferenceError] x"
    assert inference_error(f"Traceback (most recent call last):\n{resolve}\n") == (
        "Node (m) Op (MatMul) [ShapeInferenceError] x"
    )


def test_the_refusal_travels_through_the_cache_as_a_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second lint reads the refusal from the cache entry's own field: the same OL606,
    with no worker started."""
    monkeypatch.delenv("ONNXLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path))
    model = reshaped_matmul(MODELS["misfit"][0])
    first = [d.message for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL606"]
    entries = list((tmp_path / "level1").glob("*.level1"))
    assert len(entries) == 1
    header = json.loads(entries[0].read_bytes().split(b"\n", 1)[0])
    assert header["status"] == "error"
    assert "Node (matmul) Op (MatMul) [ShapeInferenceError]" in header["refusal"]
    assert header["refusal_every_level"] is False

    from onnxlint.runtime import client

    def no_worker(*args: object, **kwargs: object) -> object:
        raise AssertionError("the cached refusal should need no worker")

    monkeypatch.setattr(client, "start_optimize", no_worker)
    again = [d.message for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL606"]
    assert first and again == first


def mistyped_identity(declared: int) -> onnx.ModelProto:
    """x + Cast(Identity(float weight)), the Identity's output declared ``declared`` in
    ``value_info``: onnxconverter-common's float16 conversion with ``LayerNormalization``
    in its op block list writes float16 there while the weight stays float (held-out batch
    16: BERT's TorchScript export, whose Identity nodes share one LayerNorm bias)."""
    nodes = [
        helper.make_node("Identity", ["w"], ["b"], "ident"),
        helper.make_node("Cast", ["b"], ["bc"], "cast", to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "bc"], ["y"], "add"),
    ]
    graph = helper.make_graph(
        nodes,
        "mistyped_identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.ones(4, np.float32), "w")],
        value_info=[helper.make_tensor_value_info("b", declared, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: name -> (the Identity output's declared type, whether every session fails)
TYPED = {"mistyped": (TensorProto.FLOAT16, True), "typed": (TensorProto.FLOAT, False)}


@pytest.mark.parametrize("ep", ["cpu", "qnn", "openvino"])
@pytest.mark.parametrize("name", list(TYPED))
def test_a_declared_type_ort_infers_otherwise_is_a_session_failure(
    name: str, ep: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ORT's graph resolution says "Type Error: Type (tensor(float16)) of output arg (b) of
    node (ident) does not match expected type (tensor(float))", with no bracketed
    inference tag: OL606 reads that refusal too."""
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    declared, fails = TYPED[name]
    found = [
        d for d in lint(mistyped_identity(declared), eps=[ep]).diagnostics if d.code == "OL606"
    ]
    assert bool(found) is fails, found
    if fails:
        assert found[0].message.endswith(
            "Type Error: Type (tensor(float16)) of output arg (b) of node (ident) does not "
            "match expected type (tensor(float))."
        ), found[0].message
        # a session with every optimization disabled fails too (measured below)
        assert found[0].message_id == "every_level", found[0].message
        assert "at every optimization level" in found[0].message


def test_a_graph_no_level_loads_gets_no_partition_findings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No session of the mistyped model ever loads, so the report says nothing of what
    QNN would run: its Acos (which QNN's HTP refuses) is not reported as a CPU fallback,
    and the report names OL606 as every EP's load failure. With the right declaration
    the same model gets the fallback and no load failure."""
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")

    def with_refused_op(declared: int) -> onnx.ModelProto:
        model = mistyped_identity(declared)
        model.graph.node.append(helper.make_node("Acos", ["y"], ["d"], "acos"))
        del model.graph.output[:]
        model.graph.output.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 4]))
        return model

    typed = lint(with_refused_op(TensorProto.FLOAT), eps=["qnn"])
    assert [
        d.location.node_name for d in typed.diagnostics if d.category.value == "ep-support"
    ] == ["acos"]
    assert typed.load_failures() == {}
    mistyped = lint(with_refused_op(TensorProto.FLOAT16), eps=["qnn"])
    assert not [
        d
        for d in mistyped.diagnostics
        if d.category.value in ("ep-support", "partition") and d.code != "OL606"
    ]
    assert mistyped.load_failures() == {"": "OL606"}


def _check_typed(real: dict[str, dict[str, object]]) -> None:
    for name, (_, fails) in TYPED.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails, r
            if fails:
                assert "Type Error: Type (tensor(float16)) of output arg (b)" in str(r.get("error"))


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.usefixtures("qnn_available")
def test_mistyped_identity_on_real_qnn() -> None:
    models = {name: mistyped_identity(t) for name, (t, _) in TYPED.items()}
    _check_typed(real_sessions("qnn", sys.executable, models))


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_mistyped_identity_on_real_openvino() -> None:
    models = {name: mistyped_identity(t) for name, (t, _) in TYPED.items()}
    _check_typed(real_sessions("openvino", str(openvino_runner()), models))


def _check(real: dict[str, dict[str, object]]) -> None:
    for name, (_, fails) in MODELS.items():
        assert real[f"{name}|disabled"].get("ok"), real[f"{name}|disabled"]
        basic = real[f"{name}|basic"]
        assert (not basic.get("ok")) is fails, basic
        if fails:
            assert "[ShapeInferenceError] Incompatible dimensions" in str(basic.get("error"))


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.usefixtures("qnn_available")
def test_refused_level1_graph_on_real_qnn() -> None:
    models = {name: reshaped_matmul(inner) for name, (inner, _) in MODELS.items()}
    _check(real_sessions("qnn", sys.executable, models))


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_refused_level1_graph_on_real_openvino() -> None:
    models = {name: reshaped_matmul(inner) for name, (inner, _) in MODELS.items()}
    _check(real_sessions("openvino", str(openvino_runner()), models))

"""Real sessions on CPU, QNN HTP (simulator) and OpenVINO CPU: the facts in EP-BEHAVIOUR.

Each test skips with a reason where its EP is not installed. QNN needs the
``onnxruntime-qnn`` plugin in this interpreter; OpenVINO needs the runner venv
that ``.ci/setup-openvino.sh`` creates (``.venv-openvino``).
"""

from __future__ import annotations

import onnx
import onnx.helper as oh
import pytest
from runtime_helpers import TP, relu_model, require_ep

from onnxlint.runtime import EpSpec, SessionRequest, run_sessions
from onnxlint.runtime.normalise import NHWC_DOMAIN, match_assignment
from onnxlint.runtime.results import STATUS_ERROR, STATUS_OK

pytestmark = pytest.mark.slow

CPU = "CPUExecutionProvider"
QNN = "QNNExecutionProvider"
OV = "OpenVINOExecutionProvider"
vi = oh.make_tensor_value_info


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    opset: int = 17,
    inits: list[onnx.TensorProto] | None = None,
) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, inits or [])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _one(model: onnx.ModelProto, ep: str, runner: str, **kw: object) -> object:
    [res] = run_sessions([SessionRequest(model, **kw)], ep, runner=runner, timeout_s=120)  # type: ignore[arg-type]
    return res


# -- CPU ------------------------------------------------------------------------


def test_cpu_assignment_is_read_back() -> None:
    runner = require_ep("cpu")
    model = _model(
        [
            oh.make_node("Constant", [], ["c"], value_float=2.0, name="const"),
            oh.make_node("Mul", ["x", "c"], ["m"], name="mul0"),
            oh.make_node("Relu", ["m"], ["y"]),  # unnamed
        ],
        [vi("x", TP.FLOAT, [2, 3])],
        [vi("y", TP.FLOAT, [2, 3])],
    )
    res = _one(model, "cpu", runner)
    assert res.status == STATUS_OK
    assert res.assignment_source == "api"
    # Constant nodes never appear; unnamed nodes come back as "".
    assert [(n.name, n.op_type, n.ep) for n in res.assignment] == [
        ("mul0", "Mul", CPU),
        ("", "Relu", CPU),
    ]
    match = match_assignment(model, res.assignment)
    assert match.ep_by_index == {1: CPU, 2: CPU}
    assert match.constants == [0]


def test_cpu_assignment_from_the_verbose_log() -> None:
    # The path used with ORT < 1.24, which has no assignment API.
    runner = require_ep("cpu")
    res = _one(relu_model(), "cpu", runner, record_assignment=False)
    assert res.status == STATUS_OK
    assert res.assignment_source == "log"
    assert res.facts.get("assignment_all_on") == CPU


def test_cpu_default_level_session() -> None:
    runner = require_ep("cpu")
    res = _one(relu_model(), "cpu", runner, optimization="default", run_inputs=True)
    assert res.status == STATUS_OK
    assert res.run == {"ok": True, "run_s": res.run["run_s"]}


# -- QNN HTP ---------------------------------------------------------------------


@pytest.mark.ort_qnn
def test_qnn_soc_model_is_passed_and_a_conv_net_compiles() -> None:
    # Without soc_model, finalizing larger float graphs fails with
    # QNN_COMMON_ERROR_MEM_ALLOC (EP-BEHAVIOUR.md); the default spec sets it.
    runner = require_ep("qnn")
    import numpy as np

    nodes, inits, prev = [], [], "x"
    for i in range(4):
        w = np.full((32, 32 if i else 3, 3, 3), 0.01, np.float32)
        inits.append(onnx.numpy_helper.from_array(w, f"w{i}"))
        nodes.append(
            oh.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1] * 4)
        )
        nodes.append(oh.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        prev = f"r{i}"
    model = _model(
        nodes, [vi("x", TP.FLOAT, [1, 3, 64, 64])], [vi(prev, TP.FLOAT, None)], inits=inits
    )
    res = _one(model, "qnn", runner)
    assert res.status == STATUS_OK, res.error
    assert res.facts["mode"] == "plugin"
    assert res.versions["qnn_sdk"]
    # Layout transform: renamed, NHWC domain, Transposes inserted; normalised back.
    convs = [n for n in res.assignment if n.op_type == "Conv"]
    assert convs and all(n.domain == NHWC_DOMAIN and n.name.startswith("conv") for n in convs)
    assert any(n.op_type == "Transpose" for n in res.nodes_on(QNN))
    match = match_assignment(model, res.assignment)
    assert set(match.ep_by_index.values()) == {QNN}
    assert len(match.ep_by_index) == len(nodes)
    assert {n.op_type for n in match.inserted} == {"Transpose"}


def _refused(res: object, op: str) -> list[str]:
    return [r for (o, _), rs in res.refusal_reasons().items() if o == op for r in rs]


@pytest.mark.ort_qnn
def test_qnn_refusals_come_with_the_eps_reasons() -> None:
    runner = require_ep("qnn")
    models = {
        "constantofshape": _model(
            [oh.make_node("ConstantOfShape", ["s"], ["y"], name="cos")],
            [vi("s", TP.INT64, [2])],
            [vi("y", TP.FLOAT, None)],
        ),
        "nonzero": _model(
            [oh.make_node("NonZero", ["x"], ["y"], name="nz")],
            [vi("x", TP.FLOAT, [2, 3])],
            [vi("y", TP.INT64, None)],
        ),
        "dynamic": _model(
            [oh.make_node("Relu", ["x"], ["y"], name="r")],
            [vi("x", TP.FLOAT, ["N", 3])],
            [vi("y", TP.FLOAT, ["N", 3])],
        ),
        "q_on_input": _model(
            [
                oh.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
                oh.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq"),
            ],
            [vi("x", TP.FLOAT, [1, 8])],
            [vi("y", TP.FLOAT, [1, 8])],
            inits=[
                oh.make_tensor("s", TP.FLOAT, [], [0.1]),
                oh.make_tensor("z", TP.UINT8, [], [128]),
            ],
        ),
    }
    results = {
        r.request_id: r
        for r in run_sessions(
            [SessionRequest(m, id=k) for k, m in models.items()], "qnn", runner=runner
        )
    }
    for key, res in results.items():
        assert res.status == STATUS_OK, (key, res.error)
        assert not res.nodes_on(QNN), key
        # Nothing ran on QNN, silently: flagged.
        assert res.fallback.zero_accelerator_nodes, key
    assert (
        "`ConstantOfShape` are not supported by QNN EP"
        in _refused(results["constantofshape"], "ConstantOfShape")[0]
    )
    assert "NonZero output shape must be static" in _refused(results["nonzero"], "NonZero")[0]
    assert _refused(results["dynamic"], "Relu") == ["Cannot get shape"]
    assert (
        "not take Q nodes that consume a graph input"
        in _refused(results["q_on_input"], "QuantizeLinear")[0]
    )
    assert (
        "not take DQ nodes that generate a graph output"
        in _refused(results["q_on_input"], "DequantizeLinear")[0]
    )


@pytest.mark.ort_qnn
def test_qnn_free_dimension_override_moves_the_node_onto_qnn() -> None:
    runner = require_ep("qnn")
    model = _model(
        [oh.make_node("Relu", ["x"], ["y"], name="r")],
        [vi("x", TP.FLOAT, ["N", 3])],
        [vi("y", TP.FLOAT, ["N", 3])],
    )
    res = _one(model, "qnn", runner, free_dims={"N": 1})
    assert res.status == STATUS_OK
    assert [n.name for n in res.nodes_on(QNN)] == ["r"]
    assert not res.fallback.any


@pytest.mark.ort_qnn
def test_qnn_refuses_an_opset_6_model_as_a_whole() -> None:
    runner = require_ep("qnn")
    res = _one(relu_model(opset=6), "qnn", runner)
    assert res.status == STATUS_OK, res.error
    assert not res.nodes_on(QNN)
    rejected = res.facts["model_rejected"]
    assert rejected["ep"] == QNN
    assert "opset not being supported by the layout transformer" in rejected["message"]


@pytest.mark.ort_qnn
def test_qnn_claims_a_constant_only_partition_then_fails() -> None:
    runner = require_ep("qnn")
    model = _model(
        [oh.make_node("Add", ["a", "b"], ["y"], name="cadd")],
        [],
        [vi("y", TP.FLOAT, [1, 8])],
        inits=[
            oh.make_tensor("a", TP.FLOAT, [1, 8], [1.0] * 8),
            oh.make_tensor("b", TP.FLOAT, [1, 8], [2.0] * 8),
        ],
    )
    res = _one(model, "qnn", runner)
    assert res.status == STATUS_ERROR
    assert "zero graph inputs" in (res.error or "")
    # The verbose log shows it was claimed before the failure.
    assert any(v.passed and v.op_type == "Add" for v in res.verdicts)


# -- OpenVINO CPU ------------------------------------------------------------------


@pytest.mark.ort_openvino
def test_openvino_claims_a_single_node_model() -> None:
    runner = require_ep("openvino")
    res = _one(relu_model(), "openvino", runner)
    assert res.status == STATUS_OK, res.error
    assert res.facts["mode"] == "classic"
    assert res.versions["packages"].get("onnxruntime-openvino")
    assert [n.name for n in res.nodes_on(OV)] == ["r0"]


@pytest.mark.ort_openvino
def test_openvino_drops_single_node_clusters() -> None:
    # Relu -> Cast(uint64) -> Add(uint64) -> Cast(float) -> Relu. OpenVINO refuses
    # the uint64 nodes, leaving each Relu as a one-node cluster. Measured with
    # onnxruntime-openvino 1.24.1: the leading Relu (fed by the graph input) is
    # dropped to CPU although a one-node Relu model is claimed; the trailing Relu
    # (producing the graph output) stays on OpenVINO. So "drops single-node
    # clusters" does not hold for every cluster; this pins what was measured.
    runner = require_ep("openvino")
    model = _model(
        [
            oh.make_node("Relu", ["x"], ["r1"], name="relu_a"),
            oh.make_node("Cast", ["r1"], ["c1"], to=TP.UINT64, name="to_u64"),
            oh.make_node("Add", ["c1", "c1"], ["a"], name="add_u64"),
            oh.make_node("Cast", ["a"], ["c2"], to=TP.FLOAT, name="to_f32"),
            oh.make_node("Relu", ["c2"], ["y"], name="relu_b"),
        ],
        [vi("x", TP.FLOAT, [1, 8])],
        [vi("y", TP.FLOAT, [1, 8])],
    )
    whole = _one(relu_model(), "openvino", runner)
    assert [n.name for n in whole.nodes_on(OV)] == ["r0"], "a one-node model is claimed"
    res = _one(model, "openvino", runner)
    assert res.status == STATUS_OK, res.error
    placed = {n.name: n.ep for n in res.assignment}
    assert placed["add_u64"] == CPU
    assert placed["relu_a"] == CPU  # the dropped single-node cluster
    assert placed["relu_b"] == OV


@pytest.mark.ort_qnn
def test_qnn_float64_add_is_refused() -> None:
    # EP-BEHAVIOUR.md says float64 is accepted (mapped to float32); measured with
    # onnxruntime-qnn 2.7.0 on the HTP simulator, a float64 Add graph input is
    # refused ("Failed to add node."), at optimizations disabled and default
    # alike, as are most float64 node test cases (rules/measured/qnn.json).
    runner = require_ep("qnn")
    model = _model(
        [oh.make_node("Add", ["x", "x"], ["y"], name="add64")],
        [vi("x", TP.DOUBLE, [1, 8])],
        [vi("y", TP.DOUBLE, [1, 8])],
    )
    res = _one(model, "qnn", runner)
    assert res.status == STATUS_OK
    assert not res.nodes_on(QNN)
    assert _refused(res, "Add") == ["Failed to add node."]


@pytest.mark.ort_openvino
def test_openvino_that_cannot_be_created_is_a_silent_fallback() -> None:
    # An absent device (or a bad option) makes ORT drop the EP with a warning
    # and build a CPU-only session: no error, so it must be flagged.
    runner = require_ep("openvino")
    [res] = run_sessions(
        [SessionRequest(relu_model())],
        EpSpec.for_ep("openvino", {"device_type": "GPU.9"}),
        runner=runner,
        timeout_s=120,
    )
    assert res.status == STATUS_OK
    assert res.session_providers == [CPU]
    assert res.fallback.ep_missing_from_session
    assert res.facts["ep_create_failed"]["ep"] == OV
    assert "Failed to create" in res.fallback.message or "openvino" in res.fallback.message


@pytest.mark.ort_openvino
def test_openvino_ignores_an_unknown_device_type_silently() -> None:
    # Measured with onnxruntime-openvino 1.24.1: device_type "XYZ" is accepted,
    # the EP stays in the session, and claims nothing.
    runner = require_ep("openvino")
    [res] = run_sessions(
        [SessionRequest(relu_model())],
        EpSpec.for_ep("openvino", {"device_type": "XYZ"}),
        runner=runner,
        timeout_s=120,
    )
    assert res.status == STATUS_OK
    assert not res.nodes_on(OV)
    assert res.fallback.zero_accelerator_nodes

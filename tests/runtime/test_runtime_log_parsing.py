"""Parsing of ORT/EP verbose logs captured by the worker (no sessions created)."""

from __future__ import annotations

from onnxlint.runtime import _worker

# Captured from onnxruntime 1.31.1 + onnxruntime-qnn 2.7.0 (HTP simulator), trimmed.
QNN_LOG = """\
2026-11-29 14:21:12.990922561 [V:onnxruntime:, qnn_backend_manager.cc:2154 SetupBackend] Backend build version: v2.51.0.260929181845
2026-11-29 14:21:12.995591730 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation PASSED for 1 nodes in OrtNodeUnit (Relu) :
\tOperator type: Relu Node name: r0 Node index: 0
2026-11-29 14:21:12.995783490 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation FAILED for 1 nodes in OrtNodeUnit (ConstantOfShape) :
\tOperator type: ConstantOfShape Node name:  Node index: 1
\tREASON : Operators of type `ConstantOfShape` are not supported by QNN EP.ConstantOfShape node `` will not be assigned to QNN EP.

2026-11-29 14:21:12.996252049 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation FAILED for 1 nodes in OrtNodeUnit (ConstantOfShape) :
\tOperator type: ConstantOfShape Node name:  Node index: 1
\tREASON : Operators of type `ConstantOfShape` are not supported by QNN EP.ConstantOfShape node `` will not be assigned to QNN EP.

2026-11-29 14:21:45.634983558 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] Validation FAILED for 1 nodes in OrtNodeUnit (Conv) :
\tOperator type: Conv Node name: conv0 Node index: 2
\tREASON : Cannot get shape
"""

PLACEMENTS_LOG = """\
2026-11-29 14:21:45.737348006 [V:onnxruntime:, session_state.cc:1578 VerifyEachNodeIsAssignedToAnEp] Node placements
2026-11-29 14:21:45.737350001 [V:onnxruntime:, session_state.cc:1584 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [QNNExecutionProvider]. Number of nodes: 1
2026-11-29 14:21:45.737351944 [V:onnxruntime:, session_state.cc:1586 VerifyEachNodeIsAssignedToAnEp]   QNNExecutionProvider_7285135545873635783_0 (QNNExecutionProvider_QNNExecutionProvider_7285135545873635783_0_0)
2026-11-29 14:21:45.737359585 [V:onnxruntime:, session_state.cc:1584 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2
2026-11-29 14:21:45.737361652 [V:onnxruntime:, session_state.cc:1586 VerifyEachNodeIsAssignedToAnEp]   Shape (shp)
2026-11-29 14:21:45.737363165 [V:onnxruntime:, session_state.cc:1586 VerifyEachNodeIsAssignedToAnEp]   ConstantOfShape ()
2026-11-29 14:21:45.737365000 [V:onnxruntime:, session_state.cc:193 CreateGraphInfo] SaveMLValueNameIndexMapping
"""

ALL_PLACED_LOG = """\
2026-11-29 14:21:45.635565790 [V:onnxruntime:, session_state.cc:1578 VerifyEachNodeIsAssignedToAnEp] Node placements
2026-11-29 14:21:45.635569024 [V:onnxruntime:, session_state.cc:1581 VerifyEachNodeIsAssignedToAnEp]  All nodes placed on [CPUExecutionProvider]. Number of nodes: 3
"""

FALLBACK_LOG = """\
*************** EP Error ***************
EP Error Unknown device_type: XYZ when using [('OpenVINOExecutionProvider', {'device_type': 'XYZ'}), 'CPUExecutionProvider']
Falling back to ['CPUExecutionProvider'] and retrying.
****************************************
"""


def test_validation_verdicts_are_parsed_and_deduplicated() -> None:
    verdicts = _worker.parse_validation_log(QNN_LOG)
    assert [(v["op_type"], v["name"], v["index"], v["verdict"]) for v in verdicts] == [
        ("Relu", "r0", 0, "PASSED"),
        ("ConstantOfShape", "", 1, "FAILED"),
        ("Conv", "conv0", 2, "FAILED"),
    ]
    assert verdicts[0]["reason"] is None
    assert verdicts[1]["reason"].startswith("Operators of type `ConstantOfShape` are not supported")
    assert verdicts[2]["reason"] == "Cannot get shape"
    assert verdicts[2]["unit"] == "OrtNodeUnit"


def test_validation_block_without_node_lines_keeps_the_unit_op() -> None:
    log = (
        "[V:onnxruntime:, x.cc:1 LogNodeSupport] Validation FAILED for 2 nodes in "
        "QDQNodeUnit (Conv) :\n\tREASON : Failed to add node.\n"
    )
    [v] = _worker.parse_validation_log(log)
    assert (v["op_type"], v["unit"], v["index"], v["reason"]) == (
        "Conv",
        "QDQNodeUnit",
        -1,
        "Failed to add node.",
    )


def test_node_placements_for_older_ort() -> None:
    placed = _worker.parse_node_placements(PLACEMENTS_LOG)
    assert placed["all_on"] is None
    assert placed["count"] == 3
    assert [(n["op_type"], n["name"], n["ep"]) for n in placed["nodes"]] == [
        (
            "QNNExecutionProvider_7285135545873635783_0",
            "QNNExecutionProvider_QNNExecutionProvider_7285135545873635783_0_0",
            "QNNExecutionProvider",
        ),
        ("Shape", "shp", "CPUExecutionProvider"),
        ("ConstantOfShape", "", "CPUExecutionProvider"),
    ]


def test_all_nodes_placed_on_one_ep() -> None:
    placed = _worker.parse_node_placements(ALL_PLACED_LOG)
    assert placed == {"nodes": [], "all_on": "CPUExecutionProvider", "count": 3}


def test_scan_log_finds_fallback_and_versions() -> None:
    facts = _worker.scan_log(
        FALLBACK_LOG + QNN_LOG + "[OpenVINO-EP] Supported subgraphs on OpenVINO: 2"
    )
    assert facts["fallback_to"] == ["CPUExecutionProvider"]
    assert facts["qnn_sdk_version"] == "2.51.0.260929181845"
    assert facts["openvino_subgraphs"] == 2


def test_scan_log_finds_a_whole_model_refusal() -> None:
    log = (
        "\x1b[0;93m2026-11-29 14:46:08.119352052 [W:onnxruntime:, graph_partitioner.cc:257 "
        "GetCapabilityForEP] QNNExecutionProvider cannot be used with this model due to its "
        "ONNX opset not being supported by the layout transformer.\x1b[m\n"
    )
    facts = _worker.scan_log(log)
    assert facts["model_rejected"] == {
        "ep": "QNNExecutionProvider",
        "message": "QNNExecutionProvider cannot be used with this model due to its ONNX opset "
        "not being supported by the layout transformer.",
    }


def test_scan_log_finds_an_ep_that_could_not_be_created() -> None:
    # onnxruntime-openvino 1.24.1 with device_type GPU on a machine without one.
    log = (
        "\x1b[1;31m2026-11-29 15:11:12.262314624 [E:onnxruntime:Default, provider_bridge_ort.cc:2310 "
        "Create] /onnxruntime/onnxruntime/core/providers/openvino/openvino_provider_factory.cc:141 "
        "std::string onnxruntime::openvino_ep::ParseDeviceType(...) [OpenVINO-EP] Specified device "
        "- GPU is not part of available devices\n\x1b[m\n"
        "\x1b[0;93m2026-11-29 15:11:12.262372359 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:"
        "1066 CreateExecutionProviderFactoryInstance] Failed to create OpenVINOExecutionProvider. "
        "Please refer https://onnxruntime.ai/docs/execution-providers/OpenVINO-ExecutionProvider.html"
        "#requirements to ensure all dependencies are met.\x1b[m\n"
    )
    failed = _worker.scan_log(log)["ep_create_failed"]
    assert failed["ep"] == "OpenVINOExecutionProvider"
    assert failed["message"].startswith("Failed to create OpenVINOExecutionProvider.")
    assert "ParseDeviceType" in failed["error"]


def test_scan_log_on_a_quiet_log() -> None:
    assert _worker.scan_log("nothing to see") == {}

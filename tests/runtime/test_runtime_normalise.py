"""Mapping ORT's reported assignment back onto the source graph."""

from __future__ import annotations

import onnx
import onnx.helper as oh
import pytest

from onnxlint.runtime.normalise import (
    NHWC_DOMAIN,
    match_assignment,
    normalise_domain,
    strip_token,
)
from onnxlint.runtime.results import AssignedNode

QNN = "QNNExecutionProvider"
CPU = "CPUExecutionProvider"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("conv0_token_1", "conv0"),
        ("conv0_token_1_token_12", "conv0"),
        ("conv0", "conv0"),
        ("my_token_x", "my_token_x"),
        ("", ""),
    ],
)
def test_strip_token(name: str, expected: str) -> None:
    assert strip_token(name) == expected


def test_nhwc_domain_is_ai_onnx() -> None:
    assert normalise_domain(NHWC_DOMAIN) == ""
    assert normalise_domain("ai.onnx") == ""
    assert normalise_domain("com.microsoft") == "com.microsoft"


def _model() -> onnx.ModelProto:
    tp = onnx.TensorProto
    nodes = [
        oh.make_node("Constant", [], ["c"], value_float=1.0, name="const"),
        oh.make_node("Conv", ["x", "w"], ["y"], name="conv0"),
        oh.make_node("Relu", ["y"], ["r"]),  # unnamed
        oh.make_node("Add", ["r", "c"], ["a"]),  # unnamed
        oh.make_node("Shape", ["a"], ["s"], name="shp"),
    ]
    graph = oh.make_graph(
        nodes,
        "g",
        [
            oh.make_tensor_value_info("x", tp.FLOAT, [1, 3, 8, 8]),
            oh.make_tensor_value_info("w", tp.FLOAT, [4, 3, 3, 3]),
        ],
        [oh.make_tensor_value_info("s", tp.INT64, [4])],
    )
    return oh.make_model(graph)


def test_qnn_layout_transform_is_undone() -> None:
    # As reported by ORT 1.31.1 + QNN for a static-shape Conv -> Relu -> Add -> Shape.
    reported = [
        AssignedNode("Transpose", "Transpose", "", QNN),
        AssignedNode("conv0_token_1", "Conv", NHWC_DOMAIN, QNN),
        AssignedNode("", "Relu", "", QNN),
        AssignedNode("", "Add", "", QNN),
        AssignedNode("Transpose_token_3", "Transpose", "", QNN),
        AssignedNode("shp", "Shape", "", CPU),
        AssignedNode("Gather", "Gather", "", CPU),
    ]
    m = match_assignment(_model(), reported)
    assert m.ep_by_index == {1: QNN, 2: QNN, 3: QNN, 4: CPU}
    assert m.constants == [0]
    assert m.unreported == []
    assert [n.name for n in m.inserted] == ["Transpose", "Transpose_token_3", "Gather"]


def test_unreported_nodes_are_listed() -> None:
    m = match_assignment(_model(), [AssignedNode("conv0", "Conv", "", CPU)])
    assert m.ep_by_index == {1: CPU}
    assert m.unreported == [2, 3, 4]


def test_unnamed_nodes_match_in_order() -> None:
    tp = onnx.TensorProto
    graph = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["y"]), oh.make_node("Relu", ["y"], ["z"])],
        "g",
        [oh.make_tensor_value_info("x", tp.FLOAT, [2])],
        [oh.make_tensor_value_info("z", tp.FLOAT, [2])],
    )
    m = match_assignment(
        oh.make_model(graph),
        [AssignedNode("", "Relu", "", QNN), AssignedNode("", "Relu", "", CPU)],
    )
    assert m.ep_by_index == {0: QNN, 1: CPU}


def test_generated_names_with_other_tokens_match_by_their_stem() -> None:
    # ORT's level-1 graph (a CPU session) and the session reported count generated names'
    # tokens from different starts: gemm_input_reshape_token_5 there is _token_7 here
    tp = onnx.TensorProto
    graph = oh.make_graph(
        [
            oh.make_node("Reshape", ["x", "s"], ["a"], "gemm_input_reshape_token_5"),
            oh.make_node("Relu", ["a"], ["b"], "relu"),
            oh.make_node("Reshape", ["b", "s"], ["c"], "gemm_input_reshape_token_8"),
        ],
        "g",
        [
            oh.make_tensor_value_info("x", tp.FLOAT, [2]),
            oh.make_tensor_value_info("s", tp.INT64, [1]),
        ],
        [oh.make_tensor_value_info("c", tp.FLOAT, [2])],
    )
    m = match_assignment(
        oh.make_model(graph),
        [
            AssignedNode("gemm_input_reshape_token_7", "Reshape", "", QNN),
            AssignedNode("relu", "Relu", "", QNN),
            # an exact name is matched before any stem: this one keeps its own node
            AssignedNode("gemm_input_reshape_token_8", "Reshape", "", CPU),
        ],
    )
    assert m.ep_by_index == {0: QNN, 1: QNN, 2: CPU}
    assert not m.inserted and not m.unreported


def test_copies_of_a_shared_dequantize_keep_their_own_names() -> None:
    # ORT gives each reader of a shared DequantizeLinear its own copy (``dq_b``,
    # ``dq_b/duplicated``, ``dq_b/duplicated_token_1``): all three strip to names the
    # source has, so the copy reported first (here the Conv's, in its QNN partition)
    # must not take ``dq_b/duplicated`` from the copy reported under that name later
    tp = onnx.TensorProto
    names = ["dq_b", "dq_b/duplicated", "dq_b/duplicated_token_1"]
    graph = oh.make_graph(
        [oh.make_node("DequantizeLinear", ["q", "s"], [f"f{i}"], n) for i, n in enumerate(names)],
        "g",
        [
            oh.make_tensor_value_info("q", tp.INT32, [4]),
            oh.make_tensor_value_info("s", tp.FLOAT, []),
        ],
        [oh.make_tensor_value_info(f"f{i}", tp.FLOAT, [4]) for i in range(3)],
    )
    m = match_assignment(
        oh.make_model(graph),
        [
            AssignedNode("dq_b/duplicated_token_1", "DequantizeLinear", "", QNN),
            AssignedNode("dq_b", "DequantizeLinear", "", CPU),
            AssignedNode("dq_b/duplicated", "DequantizeLinear", "", CPU),
        ],
    )
    assert m.ep_by_index == {0: CPU, 1: CPU, 2: QNN}
    assert not m.inserted and not m.unreported

"""QNN groups the nodes it claims without seeing the values If bodies capture from the
outer graph. When a group then has a CPU node on a path between its nodes (through the
captured value), ORT's plugin host refuses QNN's whole answer for the graph ("set nodes
that cannot be fused together") and every node runs on CPU, silently (issue #16: the
silero-vad exports with their named dims fixed, 0 QNN partitions where 3 were predicted).
The profile says so with ``partitioning.grouping_ignores_captured_inputs``.

Only the order of QNN's sweep is blind to the captures: a node whose body captures a value
of a group still borders that group, so a QNN node whose output only a body reads ends its
group there (the chars2vec Keras LSTM export with its dims fixed: a Transpose the first
LSTM's Loop captures, then 12 shape nodes after that Loop, two QNN partitions).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"


def _body(name: str, op: str, reads: str = "s") -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node(op, [reads], [f"o_{name}"], f"{name}_op")],
        name,
        [],
        [helper.make_tensor_value_info(f"o_{name}", TensorProto.FLOAT, [1, 8])],
    )


def relu_sinh_sigmoid(captured: bool) -> onnx.ModelProto:
    """Relu (QNN) -> Sinh (CPU) -> Sigmoid (QNN); with ``captured`` the Sinh's output
    reaches the Sigmoid only through an If whose branches (Sinh, Cosh) capture it."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], "relu"),
        helper.make_node("Sinh", ["a"], ["s"], "sinh"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])]
    if captured:
        nodes.append(
            helper.make_node(
                "If",
                ["cond"],
                ["u"],
                "if",
                then_branch=_body("then", "Sinh"),
                else_branch=_body("else", "Cosh"),
            )
        )
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, [1]))
    nodes.append(helper.make_node("Sigmoid", ["u" if captured else "s"], ["y"], "sigmoid"))
    graph = helper.make_graph(
        nodes,
        "captured" if captured else "explicit",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        value_info=[helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 8])]
        if captured
        else [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def relu_sinh_loop_sigmoid(captured: bool) -> onnx.ModelProto:
    """The same through a Loop (two iterations): its body adds Sinh of the outer Sinh's
    output, captured, to a carried zero (``captured``), or the Sinh's output is the
    Loop's carried input and the body reads only its own values."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"], "b_id"),
            helper.make_node("Sinh", ["s" if captured else "v_in"], ["sh"], "b_sinh"),
            helper.make_node("Add", ["v_in", "sh"], ["v_out"], "b_add"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, 8]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, 8]),
        ],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], "relu"),
        helper.make_node("Sinh", ["a"], ["s"], "sinh"),
        helper.make_node(
            "Loop", ["trips", "go", "v0" if captured else "s"], ["u"], "loop", body=body
        ),
        helper.make_node("Sigmoid", ["u"], ["y"], "sigmoid"),
    ]
    inits = [
        numpy_helper.from_array(np.array(2, np.int64), "trips"),
        numpy_helper.from_array(np.array(True), "go"),
        numpy_helper.from_array(np.zeros((1, 8), np.float32), "v0"),
    ]
    graph = helper.make_graph(
        nodes,
        "loop_captured" if captured else "loop_explicit",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        inits,
        value_info=[helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def relu_captured(kind: str, sinh_after: bool = False) -> onnx.ModelProto:
    """Relu (QNN) whose output only a body reads: an If with Sinh/Cosh branches or a Loop
    adding Sinh of it to a carried zero (both on CPU); Sigmoid (QNN) on the If/Loop's
    output, through a CPU Sinh with ``sinh_after``. QNN's sweep orders nodes by their
    explicit inputs, but the If/Loop still borders the Relu's group: two partitions."""
    f = TensorProto.FLOAT
    if kind == "if":
        branches = {
            "then_branch": _body("then", "Sinh", reads="a"),
            "else_branch": _body("else", "Cosh", reads="a"),
        }
        flow = helper.make_node("If", ["cond"], ["u"], "if", **branches)
        inputs = [helper.make_tensor_value_info("cond", TensorProto.BOOL, [1])]
        inits = []
    else:
        body = helper.make_graph(
            [
                helper.make_node("Identity", ["c_in"], ["c_out"], "b_id"),
                helper.make_node("Sinh", ["a"], ["sh"], "b_sinh"),
                helper.make_node("Add", ["v_in", "sh"], ["v_out"], "b_add"),
            ],
            "body",
            [
                helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v_in", f, [1, 8]),
            ],
            [
                helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v_out", f, [1, 8]),
            ],
        )
        flow = helper.make_node("Loop", ["trips", "go", "v0"], ["u"], "loop", body=body)
        inputs = []
        inits = [
            numpy_helper.from_array(np.array(2, np.int64), "trips"),
            numpy_helper.from_array(np.array(True), "go"),
            numpy_helper.from_array(np.zeros((1, 8), np.float32), "v0"),
        ]
    nodes = [helper.make_node("Relu", ["x"], ["a"], "relu"), flow]
    last = "u"
    if sinh_after:
        nodes.append(helper.make_node("Sinh", ["u"], ["m"], "sinh_after"))
        last = "m"
    nodes.append(helper.make_node("Sigmoid", [last], ["y"], "sigmoid"))
    graph = helper.make_graph(
        nodes,
        f"{kind}_reads_relu",
        [helper.make_tensor_value_info("x", f, [1, 8]), *inputs],
        [helper.make_tensor_value_info("y", f, [1, 8])],
        inits,
        value_info=[helper.make_tensor_value_info("u", f, [1, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: name -> (model, QNN partitions the session really has); a Loop's captured value acts
#: as an If's does (measured at both levels: every node on CPU when captured); a value a
#: QNN node writes and only a body reads splits QNN's groups (measured at both levels)
CASES = {
    "captured": (relu_sinh_sigmoid(captured=True), 0),
    "explicit": (relu_sinh_sigmoid(captured=False), 2),
    "loop_captured": (relu_sinh_loop_sigmoid(captured=True), 0),
    "loop_explicit": (relu_sinh_loop_sigmoid(captured=False), 2),
    "if_reads_relu": (relu_captured("if"), 2),
    "loop_reads_relu": (relu_captured("loop"), 2),
    "loop_reads_relu_sinh_after": (relu_captured("loop", sinh_after=True), 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_group_across_a_captured_value_loses_the_whole_graph(name: str) -> None:
    model, real = CASES[name]
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    assert len(plan.partitions_on(QNN)) == real
    released = [why for p, why in plan.released.items() if p == "main/relu"]
    if real == 0:
        assert released and "cannot be fused" in released[0]
    else:
        assert plan.node_ep["main/relu"] == QNN
        assert plan.node_ep["main/sigmoid"] == QNN


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_captured_grouping_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    from .conftest import agreement

    real = real_sessions("qnn", sys.executable, {n: m for n, (m, _) in CASES.items()})
    for name, (model, partitions_real) in CASES.items():
        r = real[f"{name}|disabled"]
        assert r.get("ok"), r
        got = agreement.compare(agreement.predict(model, "qnn")["disabled"], r, QNN)
        assert got["real_partitions"] == partitions_real, (name, got)
        assert got["predicted_partitions"] == partitions_real, (name, got)

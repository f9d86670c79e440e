"""QNN HTP and tensors with a zero-sized dimension (a static shape such as [2, 0]).

QNN takes a unary or shape op reading an empty computed tensor and then fails to build it
("Failed to compose Qnn graph"; Transpose and ReduceSum crash the process): session
creation fails, with no fallback (OL513, ``partitioning.empty_input_failure``). It refuses
the binary elementwise ops reading one beside a tensor that holds elements (a
``no_zero_dims`` constraint: they run on the CPU), but takes one whose inputs are all empty
(``Sub(e, e)``; ``only_beside_elements``), which then fails as the unary ops do; it builds a Concat by skipping its empty inputs (concat_op_builder.cc). An empty constant
(Resize's unused roi) is no tensor QNN builds. Measured with onnxruntime 1.32.0 +
onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator, ``soc_model=60``), both levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint
from onnxlint.ep_names import CPU_EP

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"


def empty_model(op: str, source: str) -> onnx.ModelProto:
    """``op`` reading a [2, 0] float tensor (a binary ``op`` beside a [1, 1] constant, or
    ``<op>_both`` twice): the graph input itself (``input``), or an empty
    Slice (which QNN refuses) of a [2, 4] input, beside a QNN Relu -> Sigmoid (``slice``)."""
    inits = [
        numpy_helper.from_array(np.array([4], np.int64), "starts"),
        numpy_helper.from_array(np.array([100], np.int64), "ends"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(np.ones((1, 1), np.float32), "one"),
    ]
    nodes = []
    outputs = [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)]
    if source == "input":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0])
        empty = "x"
    else:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
        nodes += [
            helper.make_node("Relu", ["x"], ["r"], name="pre"),
            helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["e"], name="slice"),
            helper.make_node("Sigmoid", ["r"], ["z"], name="post"),
        ]
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4]))
        empty = "e"
    if op.endswith("_both"):
        nodes.append(helper.make_node(op.split("_")[0], [empty, empty], ["o"], name="op"))
    elif op in ("Add", "Mul", "Sub"):
        nodes.append(helper.make_node(op, [empty, "one"], ["o"], name="op"))
    elif op == "Softmax":
        nodes.append(helper.make_node(op, [empty], ["o"], name="op", axis=-1))
    else:
        nodes.append(helper.make_node(op, [empty], ["o"], name="op"))
    graph = helper.make_graph(nodes, "g", [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


#: op -> "fails" (claimed, session creation fails) or "cpu" (refused, runs on the CPU)
CASES = {
    "Neg": "fails",
    "Relu": "fails",
    "Sigmoid": "fails",
    "Softmax": "fails",
    "Transpose": "fails",
    "Add": "cpu",
    "Mul": "cpu",
    "Sub": "cpu",
    "Add_both": "fails",
    "Mul_both": "fails",
    "Sub_both": "fails",
}
SOURCES = ("input", "slice")


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("op", sorted(CASES))
def test_empty_tensor_on_qnn(op: str, source: str) -> None:
    model = empty_model(op, source)
    parts = partitions(model, ["qnn"])
    fails = CASES[op] == "fails"
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/op"] == (QNN if fails else CPU_EP), (op, source, level)
        assert ("main/op" in plan.finalize_failures) is fails, (op, source, level)
    flagged = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert bool(flagged) is fails
    if fails:
        assert flagged[0].location.node_name == "op"
        assert "zero-sized" in flagged[0].message


def test_an_empty_constant_is_not_a_failure() -> None:
    """Resize's unused roi, an empty initializer, is no tensor QNN builds."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    inits = [
        numpy_helper.from_array(np.zeros((0,), np.float32), "roi"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]
    nodes = [helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="resize")]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/resize"] == QNN
    assert not plan.finalize_failures


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_empty_tensor_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"{op}-{src}": empty_model(op, src) for op in CASES for src in SOURCES}
    real = real_sessions("qnn", sys.executable, models)
    for name in models:
        op = name.split("-")[0]
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            if op == "Transpose":
                # it crashes the process: the runner reports the lost worker
                assert not r.get("ok"), (name, level, r)
            elif CASES[op] == "fails":
                assert "Failed to compose Qnn graph" in str(r.get("error")), (name, level, r)
            else:
                assert r.get("ok"), (name, level, r)
                on = {n["name"]: p["ep"] for p in r["partitions"] for n in p["nodes"]}
                assert on["op"] == CPU_EP, (name, level, on)

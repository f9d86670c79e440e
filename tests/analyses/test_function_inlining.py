"""Model-local functions are inlined as ORT inlines them on loading, at every
optimization level and before any EP chooses: the same nodes, node names and value
names as the graph a CPU session with optimizations disabled saves, so that a finding
names an inlined node as ORT's own logs and assignment do (``_inlfunc_<function>_...``,
``_token_<n>`` for a second call of one function).

Checked against onnxruntime 1.32.0 (the graph its session saves)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.analyses.function_inlining import inline_functions
from onnxlint.confirm.diff import reported_to_paths
from onnxlint.index import ModelIndex
from onnxlint.runtime.results import AssignedNode

F = TensorProto.FLOAT
OPSETS = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]


def _fn(
    name: str, nodes: list[onnx.NodeProto], ins: list[str], outs: list[str]
) -> onnx.FunctionProto:
    return helper.make_function("local", name, ins, outs, nodes, OPSETS)


def nested_calls() -> onnx.ModelProto:
    """Two calls of Block (which calls Act and has an unnamed node and a second output,
    unused at one call) and a call of Act, on a [2, 3] tensor."""
    act = _fn(
        "Act",
        [
            helper.make_node("Relu", ["i"], ["t"], "relu"),
            helper.make_node("Neg", ["t"], ["o"], "neg"),
        ],
        ["i"],
        ["o"],
    )
    block = _fn(
        "Block",
        [
            helper.make_node("Act", ["i"], ["a"], "act", domain="local"),
            helper.make_node("Add", ["a", "i"], ["o"], "add"),
            helper.make_node("Sigmoid", ["o"], ["s"]),
        ],
        ["i"],
        ["o", "s"],
    )
    nodes = [
        helper.make_node("Block", ["x"], ["b1", "s1"], "blk1", domain="local"),
        helper.make_node("Block", ["x"], ["b2", ""], "blk2", domain="local"),
        helper.make_node("Act", ["b1"], ["c"], "act", domain="local"),
        helper.make_node("Add", ["c", "b2"], ["y"], "sum"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [
            helper.make_tensor_value_info("y", F, [2, 3]),
            helper.make_tensor_value_info("s1", F, [2, 3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=OPSETS, functions=[act, block], ir_version=8)
    onnx.checker.check_model(model)
    return model


def with_attribute_and_branch() -> onnx.ModelProto:
    """A function with an attribute reference (given at one call, left to its default
    at the other) and an If whose branches have their own values."""
    then = helper.make_graph(
        [helper.make_node("LeakyRelu", ["i"], ["t"], "leaky")],
        "then",
        [],
        [helper.make_tensor_value_info("t", F, [2, 3])],
    )
    leaky = then.node[0]
    leaky.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    other = helper.make_graph(
        [helper.make_node("Neg", ["i"], ["e"], "neg")],
        "else",
        [],
        [helper.make_tensor_value_info("e", F, [2, 3])],
    )
    body = [
        helper.make_node("ReduceSum", ["i"], ["r"], "sum", keepdims=0),
        helper.make_node("Greater", ["r", "zero"], ["c"], "gt"),
        helper.make_node("If", ["c"], ["o"], "branch", then_branch=then, else_branch=other),
    ]
    fn = helper.make_function("local", "Gate", ["i", "zero"], ["o"], body, OPSETS, attributes=[])
    fn.attribute_proto.append(helper.make_attribute("alpha", 0.5))
    nodes = [
        helper.make_node("Gate", ["x", "z"], ["g1"], "gate1", domain="local", alpha=0.25),
        helper.make_node("Gate", ["g1", "z"], ["y"], "gate2", domain="local"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, [2, 3])],
        [onnx.numpy_helper.from_array(__import__("numpy").zeros((), "float32"), "z")],
    )
    model = helper.make_model(graph, opset_imports=OPSETS, functions=[fn], ir_version=9)
    onnx.checker.check_model(model)
    return model


def calls_in_branches() -> onnx.ModelProto:
    """Calls inside If branches: of the main graph (two calls of Act in one branch) and
    of a function's body (Outer's If calls Act), next to a call in the main graph."""
    act = _fn(
        "Act",
        [
            helper.make_node("Relu", ["i"], ["t"], "relu"),
            helper.make_node("Neg", ["t"], ["o"], "neg"),
        ],
        ["i"],
        ["o"],
    )

    def branch(name: str, calls: int, value: str) -> onnx.GraphProto:
        nodes: list[onnx.NodeProto] = []
        for k in range(calls):
            nodes.append(
                helper.make_node("Act", [value], [f"{name}{k}"], f"{name}_act{k}", domain="local")
            )
            value = f"{name}{k}"
        nodes.append(helper.make_node("Identity", [value], [f"{name}_out"], f"{name}_id"))
        return helper.make_graph(
            nodes, name, [], [helper.make_tensor_value_info(f"{name}_out", F, [2, 3])]
        )

    inner = [
        helper.make_node("ReduceSum", ["i"], ["r"], "sum", keepdims=0),
        helper.make_node("Greater", ["r", "zero"], ["c"], "gt"),
        helper.make_node(
            "If",
            ["c"],
            ["o"],
            "branch",
            then_branch=branch("t", 1, "i"),
            else_branch=branch("e", 0, "i"),
        ),
    ]
    outer = _fn("Outer", inner, ["i", "zero"], ["o"])
    nodes = [
        helper.make_node("Act", ["x"], ["a"], "act", domain="local"),
        helper.make_node("ReduceSum", ["a"], ["r"], "sum", keepdims=0),
        helper.make_node("Greater", ["r", "z"], ["c"], "gt"),
        helper.make_node(
            "If",
            ["c"],
            ["b"],
            "top",
            then_branch=branch("tt", 2, "a"),
            else_branch=branch("ee", 0, "a"),
        ),
        helper.make_node("Outer", ["b", "z"], ["y"], "outer", domain="local"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, [2, 3])],
        [onnx.numpy_helper.from_array(__import__("numpy").zeros((), "float32"), "z")],
    )
    model = helper.make_model(graph, opset_imports=OPSETS, functions=[act, outer], ir_version=9)
    onnx.checker.check_model(model)
    return model


def _saved_by_ort(model: onnx.ModelProto, tmp: Path) -> onnx.ModelProto:
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = str(tmp / "saved.onnx")
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return onnx.load(str(tmp / "saved.onnx"))


def _nodes(graph: onnx.GraphProto) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for n in graph.node:
        attrs = []
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                attrs.append((a.name, tuple(_nodes(a.g))))
            elif a.type == onnx.AttributeProto.FLOAT:
                attrs.append((a.name, round(a.f, 6)))
        out.append((n.name, n.op_type, tuple(n.input), tuple(n.output), tuple(sorted(attrs))))
    return sorted(out, key=repr)


@pytest.mark.parametrize("build", [nested_calls, with_attribute_and_branch, calls_in_branches])
def test_inlined_as_ort_saves_it(build: object, tmp_path: Path) -> None:
    model = build()  # type: ignore[operator]
    assert _nodes(inline_functions(model).graph) == _nodes(_saved_by_ort(model, tmp_path).graph)


def test_second_calls_get_tokens_in_ort_order() -> None:
    names = {(n.name, tuple(n.output)) for n in inline_functions(nested_calls()).graph.node}
    # the first call of each function has no token; one counter runs over the graph
    assert ("_inlfunc_Block_add", ("b1",)) in names
    assert ("_inlfunc_Block_token_0_add", ("b2",)) in names
    assert ("_inlfunc_Act_neg", ("c",)) in names
    assert ("_inlfunc_Act_token_1_neg", ("_inlfunc_Block_a",)) in names
    assert ("_inlfunc_Act_token_2_neg", ("_inlfunc_Block_token_0_a",)) in names


def test_a_model_without_functions_is_returned_as_is() -> None:
    model = nested_calls()
    del model.functions[:]
    assert inline_functions(model) is model


def test_every_node_ort_reports_is_matched_by_name() -> None:
    # what the confirm step and the accuracy benchmark compare: the names ORT reports
    ort = pytest.importorskip("onnxruntime")
    model = nested_calls()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    reported = [
        AssignedNode(name=n.name, op_type=n.op_type, domain=n.domain, ep=sg.ep_name)
        for sg in session.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    ]
    inlined = inline_functions(model)
    actual, inserted, unreported = reported_to_paths(ModelIndex(inlined), reported)
    assert not inserted and not unreported and len(actual) == len(inlined.graph.node) == 11

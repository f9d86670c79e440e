"""The walks over every tensor of a model name each tensor's graph only for a caller that
reads the name (issue 19).

A graph path of a body needs the labels of every node of the graph that holds it (a pass
over its nodes, names read from protobuf). The loader's external-data check, the level-1
eligibility and the external-data questions walk every tensor of the model; on the 100k
graph, three such walks made those labels for every graph with a body. Counted, not timed.
"""

from __future__ import annotations

from typing import Any

import onnx
import pytest
from onnx import helper

from onnxlint import tensors
from onnxlint.analyses.level1.eligibility import skip_reason
from onnxlint.loader import load
from onnxlint.modelfile.external import check_external_data
from onnxlint.tensors import iter_tensors


def _model(mismatch: bool = False, external: bool = False) -> onnx.ModelProto:
    """A Constant and an initializer in the main graph and in an If's branches."""

    def branch(tag: str) -> onnx.GraphProto:
        c = helper.make_tensor(f"c_{tag}", onnx.TensorProto.FLOAT, [2], [1.0, 2.0])
        return helper.make_graph(
            [
                helper.make_node("Constant", [], [f"k_{tag}"], value=c),
                helper.make_node("Add", ["x", f"k_{tag}"], [f"o_{tag}"]),
            ],
            f"b_{tag}",
            [],
            [helper.make_tensor_value_info(f"o_{tag}", onnx.TensorProto.FLOAT, [2])],
        )

    w = helper.make_tensor("w", onnx.TensorProto.FLOAT, [2], [0.5, 0.5])
    if mismatch:
        w.dims[:] = [3]  # three declared, two stored
    if external:
        w.ClearField("float_data")
        w.data_location = onnx.TensorProto.EXTERNAL
        w.external_data.add(key="location", value="weights.bin")
    g = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["a"]),
            helper.make_node("ReduceSum", ["a"], ["s"], keepdims=0),
            helper.make_node("Cast", ["s"], ["cond"], to=onnx.TensorProto.BOOL),
            helper.make_node(
                "If", ["cond"], ["y"], then_branch=branch("t"), else_branch=branch("e")
            ),
        ],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
        [w],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _count_labels(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of nodes of each labelling the tensor walk does from now on."""
    calls: list[int] = []
    real = tensors.node_labels

    def counted(nodes: Any) -> Any:
        calls.append(len(nodes))
        return real(nodes)

    monkeypatch.setattr(tensors, "node_labels", counted)
    return calls


def test_the_walk_without_paths_gives_the_same_tensors_in_the_same_order() -> None:
    model = _model()
    named = [t.name for t, _ in iter_tensors(model)]
    assert [t.name for t, _ in iter_tensors(model, paths=False)] == named
    assert {"w", "c_t", "c_e"} <= set(named)
    # the named walk still names the bodies' graphs by their node
    assert any(":then_branch" in where for _, where in iter_tensors(model))


def test_the_walk_names_bodies_by_the_index_label_past_nodes_without_attributes() -> None:
    # nodes without attributes are passed over (no tensors, no bodies); a node with
    # bodies still gets the label the index gives it, also when it has a name
    model = _model()
    expected = [("w", "main"), ("c_t", "main/If_3:then_branch"), ("c_e", "main/If_3:else_branch")]
    assert [(t.name, where) for t, where in iter_tensors(model)] == expected
    unlabelled = [("w", "main"), ("c_t", "main:then_branch"), ("c_e", "main:else_branch")]
    assert [(t.name, where) for t, where in iter_tensors(model, paths=False)] == unlabelled
    model.graph.node[3].name = "/if/cond"
    named = [where for _, where in iter_tensors(model)][1:]
    assert named == ['main/"/if/cond":then_branch', 'main/"/if/cond":else_branch']


def test_loading_and_the_level1_check_label_no_node_without_external_data_or_mismatch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _model()
    calls = _count_labels(monkeypatch)
    loaded = load(model)
    assert loaded.model is not None and not loaded.fatal
    assert list(check_external_data(model, None)) == []
    assert skip_reason(model) is None
    assert calls == []  # before: the main graph's four nodes, once per walk


def test_a_mismatch_is_still_named_by_its_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(mismatch=True)
    calls = _count_labels(monkeypatch)
    reason = skip_reason(model)
    assert reason == "a tensor in main declares 3 elements but holds 2 (OL109)"
    assert len(calls) <= 1  # only the walk that names it


def test_an_external_tensor_is_still_named_by_its_graph() -> None:
    problems = list(check_external_data(_model(external=True), None))
    assert [(p.code, p.location.graph, p.location.tensor) for p in problems] == [
        ("OL010", "main", "w")
    ]

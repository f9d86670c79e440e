"""Per-node work on a large graph that a lint no longer repeats (issue 19).

On the 100k-node graph with every EP each of these ran hundreds of thousands or millions
of times: reading a node's operator and domain from protobuf (a new string per read),
the type parameters of its schema, a copy of every node's assignment to record a first
claimer it already had, and a call per node in each of a dozen walks over the graphs.
Counted, not timed.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import onnx
import pytest
from onnx import helper

from onnxlint import index as index_module
from onnxlint.analyses import node_facts as node_facts_module
from onnxlint.analyses.assignment import Assignment
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex, NodeRef, iter_graphs
from onnxlint.loader import load

#: identical Relu nodes, then an If whose branches hold one node each
RELUS = 6


def _model() -> onnx.ModelProto:
    def branch(tag: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Neg", ["h"], [f"o_{tag}"])],
            f"b_{tag}",
            [],
            [helper.make_tensor_value_info(f"o_{tag}", onnx.TensorProto.FLOAT, [2])],
        )

    nodes = [helper.make_node("Relu", [f"h{i}"], [f"h{i + 1}"]) for i in range(RELUS)]
    nodes += [
        helper.make_node("Identity", [f"h{RELUS}"], ["h"]),
        helper.make_node("ReduceSum", ["h"], ["s"], keepdims=0),
        helper.make_node("Cast", ["s"], ["c"], to=onnx.TensorProto.BOOL),
        helper.make_node("If", ["c"], ["y"], then_branch=branch("t"), else_branch=branch("e")),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("h0", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_node_ref_holds_its_operator_and_domain_read_once() -> None:
    for name in ("op_type", "domain"):
        assert not isinstance(inspect.getattr_static(NodeRef, name), property)
    model = _model()
    model.graph.node[0].domain = "ai.onnx"
    refs = ModelIndex(model).nodes
    assert [r.op_type for r in refs] == [r.node.op_type for r in refs]
    assert {r.domain for r in refs} == {index_module.DEFAULT_DOMAIN}  # "" and "ai.onnx" alike


def test_the_graph_walk_asks_only_nodes_with_attributes_for_bodies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _model()
    asked: list[str] = []
    real = index_module.subgraphs

    def counted(node: onnx.NodeProto) -> Any:
        asked.append(node.op_type)
        return real(node)

    monkeypatch.setattr(index_module, "subgraphs", counted)
    graphs = list(iter_graphs(model.graph))
    assert sorted(g.name for g in graphs) == ["b_e", "b_t", "g"]
    assert sorted(asked) == ["Cast", "If", "ReduceSum"]  # not the Relus, Identity or Neg


def _context(model: onnx.ModelProto, eps: list[str]) -> LintContext:
    config = Config()
    return LintContext(
        loaded=load(model), index=ModelIndex(model), config=config, eps=resolve_eps(eps, config)
    )


def test_type_params_are_read_once_per_schema_and_arity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_facts_module, "_TYPE_PARAMS", {})
    read: list[tuple[str, str, int]] = []
    real = node_facts_module._schema_type_params

    def counted(schema: Any, formals_attr: str, count: int) -> Any:
        read.append((schema.name, formals_attr, count))
        return real(schema, formals_attr, count)

    monkeypatch.setattr(node_facts_module, "_schema_type_params", counted)
    la = _context(_model(), ["qnn"]).analysis(Assignment).exported
    assert sum(na.node.op_type == "Relu" for na in la.nodes.values()) == RELUS
    assert read.count(("Relu", "inputs", 1)) == 1  # before: once per Relu
    assert len(read) == len(set(read))
    relu = next(na for na in la.nodes.values() if na.node.op_type == "Relu")
    assert relu.facts.input_type_params == ("T",)


def test_a_first_claimer_already_recorded_is_not_copied_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copies: list[str] = []
    real = dataclasses.replace

    def counted(obj: Any, /, **changes: Any) -> Any:
        if set(changes) == {"first_claimer"}:
            copies.append(changes["first_claimer"])
        return real(obj, **changes)

    monkeypatch.setattr(dataclasses, "replace", counted)
    la = _context(_model(), ["cpu"]).analysis(Assignment).exported
    assert la.nodes and all(na.first_claimer == "CPUExecutionProvider" for na in la.nodes.values())
    assert copies == []  # before: one copy per node

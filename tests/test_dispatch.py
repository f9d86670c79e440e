"""The engine dispatches nodes to rules on ``(domain, op_type)``, not on the op type alone."""

from __future__ import annotations

from typing import Any, ClassVar

import onnx
from onnx import helper

from onnxlint.config import Config
from onnxlint.diagnostics import Category, Severity
from onnxlint.engine import _run_rules
from onnxlint.index import NodeRef
from onnxlint.loader import load
from onnxlint.rule import Rule


def _model() -> onnx.ModelProto:
    """An ai.onnx Relu, a custom-domain Relu and a com.microsoft EPContext-like node."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="std"),
        helper.make_node("Relu", ["a"], ["b"], name="custom", domain="my.ops"),
        helper.make_node("EPContext", ["b"], ["y"], name="ctx", domain="com.microsoft"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y])
    return helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("my.ops", 1),
            helper.make_opsetid("com.microsoft", 1),
        ],
    )


def _visited(visits: tuple[Any, ...]) -> list[str]:
    seen: list[str] = []

    class Probe(Rule):
        """Records the nodes it is given.

        What it does: test only. Why it matters: test only. Fix: none.
        Execution providers: none.
        """

        code = "OL999"
        name = "dispatch-probe"
        category = Category.STRUCTURE
        severity = Severity.INFO
        messages: ClassVar[dict[str, str]] = {"default": "x"}

        def check_node(self, ctx: Any, node: NodeRef) -> None:
            seen.append(node.name)

    Probe.visits = visits
    _run_rules(load(_model()), Config(), [], [Probe()])
    return seen


def test_a_plain_op_type_means_the_default_domain() -> None:
    assert _visited(("Relu",)) == ["std"]


def test_a_pair_names_another_domain() -> None:
    assert _visited((("my.ops", "Relu"),)) == ["custom"]
    assert _visited((("com.microsoft", "EPContext"),)) == ["ctx"]
    assert _visited(("EPContext",)) == []


def test_the_empty_domain_is_ai_onnx_and_star_is_every_node() -> None:
    assert _visited((("", "Relu"),)) == ["std"]
    assert _visited((("ai.onnx", "Relu"), "Relu")) == ["std"]
    assert _visited(("*",)) == ["std", "custom", "ctx"]


def test_malformed_visits_are_a_metadata_problem() -> None:
    class Bad(Rule):
        visits: ClassVar[tuple[Any, ...]] = (("com.microsoft",), "")

    problems = Bad.metadata_problems()
    assert "visits entry ('com.microsoft',) is neither an op type nor (domain, op)" in problems
    assert "visits entry '' is neither an op type nor (domain, op)" in problems

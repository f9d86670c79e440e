"""The engine runs the model checks that read an answer of ORT's worker process (the
installed ORT's limits, the EP assignment built on ORT's level-1 graph) after every other
check, so that the worker answers while the rest of the lint runs (issue 19: a cold lint
stalled in OL201 until the worker had imported onnxruntime). Findings are sorted after the
rules, so the order changes no report."""

from __future__ import annotations

from typing import Any

import pytest

import onnxlint
from onnxlint import walk
from onnxlint.rule import Rule, all_rules, reads_ort
from onnxlint.rules.opset import IrVersionTooNew, OpsetTooNew, UnknownDomain
from onnxlint.rules.structure import UnusedInitializer

from .conftest import parse

TEXT = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [first] a = Relu(x)
    [second] y = Softmax(a)
}
"""


def test_checks_that_read_ort_run_after_the_node_walk_and_the_other_model_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    def recorder(label: str, original: Any) -> Any:
        def check(self: Any, ctx: Any, *node: Any) -> None:
            order.append(f"{label} {node[0].name}" if node else label)
            original(self, ctx, *node)

        return check

    monkeypatch.setattr(UnknownDomain, "check_node", recorder("node", UnknownDomain.check_node))
    for cls in (OpsetTooNew, IrVersionTooNew, UnusedInitializer):
        monkeypatch.setattr(cls, "check_model", recorder(cls.code, cls.check_model))
    onnxlint.lint(parse(TEXT), eps=["qnn"])
    assert order == ["OL105", "node first", "node second", "OL201", "OL202"]


def test_the_same_findings_in_either_order(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = TEXT.replace('"" : 17', '"" : 99').replace("[second] y = Softmax(a)", "y = Foo(a)")
    expected = [d.to_dict() for d in onnxlint.lint(parse(bad), eps=["qnn"]).diagnostics]
    assert {d["code"] for d in expected} >= {"OL201", "OL204"}
    monkeypatch.setattr(walk, "reads_ort", lambda rule: False)
    assert [d.to_dict() for d in onnxlint.lint(parse(bad), eps=["qnn"]).diagnostics] == expected


def test_which_rules_read_ort() -> None:
    deferred = {cls.code for cls in all_rules() if reads_ort(cls)}
    assert {"OL201", "OL202", "OL501", "OL601", "OL605"} <= deferred
    assert not deferred & {"OL101", "OL105", "OL203", "OL301", "OL401", "OL801"}
    for cls in all_rules():
        if reads_ort(cls):
            # a deferred rule checks the model only: none keeps state for node checks
            assert cls.check_node is Rule.check_node, cls.code

"""A rule that crashes on one node costs that rule's finding on that node, never the lint:
the crash is an OL099 finding at the node, and every other check still runs."""

from __future__ import annotations

from typing import Any

import pytest

import onnxlint
from onnxlint.rules.opset import UnknownDomain
from onnxlint.rules.structure import UndefinedValue

from .conftest import parse

TEXT = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [first] a = Relu(x)
    [second] b = Add(a, missing)
    [third] y = Relu(b)
}
"""


def test_a_crash_on_one_node_is_a_finding_there(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def check(self: Any, ctx: Any, node: Any) -> None:
        seen.append(node.name)
        if node.name == "first":
            raise RuntimeError("boom")

    monkeypatch.setattr(UnknownDomain, "check_node", check)
    report = onnxlint.lint(parse(TEXT))
    crashes = [d for d in report.diagnostics if d.code == "OL099"]
    assert [d.location.node_name for d in crashes] == ["first"]
    assert "OL203 unknown-domain" in crashes[0].message
    assert "RuntimeError: boom" in crashes[0].message
    assert seen == ["first", "second", "third"]  # the walk went on, node after node
    # the other rules' findings on the same nodes are there
    assert any(d.code == UndefinedValue.code for d in report.diagnostics)

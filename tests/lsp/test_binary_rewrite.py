"""A binary ``.onnx`` saved again with one main-graph node changed is found by its wire
layout (``carryover.node_edit_at``, ``edits.rewritten_node``) and linted with the
previous Shapes analysis where the edit provably leaves it (issue 19); anything else is
analysed again. Each result is a fresh lint's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint.lsp.carryover import Layout, node_edit_at
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import analyse, path_to_uri
from tests.lsp.models import count_shapes

TEXT = """<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y, float[4,N] t) {
   [soft] s = Softmax <axis: int = -1> (x)
   [relu] y = Relu (s)
   [tr] t = Transpose <perm: ints = [1, 0]> (y)
}
"""


def _edit(model: onnx.ModelProto, what: str) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if what in ("rename", "two"):
        out.graph.node[1].name = "activation"
    if what == "two":
        out.graph.node[2].name = "transpose"
    if what == "axis":
        out.graph.node[0].attribute[0].i = 0
    if what == "perm":
        del out.graph.node[2].attribute[0].ints[:]
        out.graph.node[2].attribute[0].ints.extend([0, 1])
    if what == "output":
        out.graph.output[1].name = "t2"
        out.graph.node[2].output[0] = "t2"
    return out


# (edit, node position found on the wire, Shapes taken over)
CASES = [("rename", 1, True), ("axis", 0, True), ("perm", 2, False), ("two", None, False)]


@pytest.mark.parametrize(("what", "at", "taken"), CASES, ids=[c[0] for c in CASES])
def test_a_one_node_rewrite_is_found_and_linted_as_a_fresh_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, at: int | None, taken: bool
) -> None:
    model = onnx.parser.parse_model(TEXT)
    edited = _edit(model, what)
    before, after = model.SerializeToString(), edited.SerializeToString()
    old, new = Layout.of(before), Layout.of(after)
    assert old is not None and new is not None
    assert node_edit_at(old, new) == at
    computed = count_shapes(monkeypatch)
    doc = tmp_path / "m.onnx"
    doc.write_bytes(before)
    uri = path_to_uri(doc)
    state = analyse(uri, doc, before, Settings())
    doc.write_bytes(after)
    state = analyse(uri, doc, after, Settings(), prior=state)
    assert (len(computed) == 1) is taken
    fresh = analyse(uri, doc, after, Settings())
    assert state.report.to_dict() == fresh.report.to_dict()


def test_any_change_outside_the_node_is_not_a_node_edit() -> None:
    model = onnx.parser.parse_model(TEXT)
    old = Layout.of(model.SerializeToString())
    new = Layout.of(_edit(model, "output").SerializeToString())
    assert old is not None and new is not None and node_edit_at(old, new) is None
    stamped = _edit(model, "rename")
    stamped.producer_name = "again"
    moved = Layout.of(stamped.SerializeToString())
    assert moved is not None and node_edit_at(old, moved) is None


def _lint_rewrite(
    tmp_path: Path, edited: onnx.ModelProto, settings: Settings | None = None
) -> tuple[Any, Any]:
    """The rewrite's result (from the previous one) and a fresh lint's of the same file."""
    settings = settings or Settings()
    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    before = model.SerializeToString()
    doc.write_bytes(before)
    uri = path_to_uri(doc)
    state = analyse(uri, doc, before, settings)
    after = edited.SerializeToString()
    doc.write_bytes(after)
    return analyse(uri, doc, after, settings, prior=state), analyse(uri, doc, after, settings)


def test_a_one_node_rewrite_is_read_from_its_bytes_with_that_node_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load's whole-model checks run on the changed node only; a node they refuse,
    or one holding a graph, sends the file to the whole load, whose findings are a fresh
    lint's."""
    from onnxlint.lsp import edits
    from onnxlint.modelfile import read

    given: list[bool] = []
    real = read.read_node_edit

    def recorded(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        given.append(got is not None)
        return got

    monkeypatch.setattr(edits, "read_node_edit", recorded)
    model = onnx.parser.parse_model(TEXT)
    state, fresh = _lint_rewrite(tmp_path, _edit(model, "rename"))
    assert given == [True] and state.report.to_dict() == fresh.report.to_dict()
    long_name = _edit(model, "rename")
    long_name.graph.node[1].name = "n" * 70_000  # over the default name-length limit
    state, fresh = _lint_rewrite(tmp_path, long_name)
    assert given[-1] is False
    assert state.report.to_dict() == fresh.report.to_dict()
    assert any(d.code == "OL008" for d in state.report.diagnostics)
    with_body = _edit(model, "rename")
    body = onnx.helper.make_graph([], "b", [], [])
    with_body.graph.node[1].attribute.append(onnx.helper.make_attribute("body", body))
    state, fresh = _lint_rewrite(tmp_path, with_body)
    assert given[-1] is False and state.report.to_dict() == fresh.report.to_dict()

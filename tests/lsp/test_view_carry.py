"""The graph view of a binary ``.onnx`` saved again with one main-graph node edited is
made from the previous result's view (``printer.view_after_node_edit``): that node's
line, tokens and entry anew, the rest as it was. Edit by edit (a rename, a name removed
or given, a quoted name, an attribute, a tensor attribute, another operator, a node
before and after a body, a function call, in a chain) the view is the one
``render_graph_view`` gives the new model: its text, nodes in order, graphs, tokens and
scopes. A previous view not rendered yet, or a previous result gone, renders it whole."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

import onnxlint.lsp.state as state_module
from onnxlint.index import ModelIndex
from onnxlint.lsp.printer import render_graph_view
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.lsp.workspace import ModelState, analyse, path_to_uri

TEXT = """<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[N,4] x, bool c) => (float[N,4] y, float[4,N] t, float[N,4] h, float[N,4] k, float[N,4] f) {
   [soft] s = Softmax <axis: int = -1> (x)
   [relu] y = Relu (s)
   [tr] t = Transpose <perm: ints = [1, 0]> (y)
   h = If (c) <then_branch = tb () => (float[N,4] o) { o = Neg (y) }, else_branch = eb () => (float[N,4] p) { p = Abs (y) }>
   ["/model/layer.0/Add"] a = Add (h, y)
   [scale] k = Mul (a, two)
   two = Constant <value: tensor = float[1] {2.0}> ()
   [call] f = local.Double (y)
}
<domain: "local", opset_import: ["" : 17]>
Double (u) => (v) {
   v = Add (u, u)
}
"""


def _rename(position: int, name: str) -> Callable[[onnx.ModelProto], None]:
    def edit(model: onnx.ModelProto) -> None:
        model.graph.node[position].name = name

    return edit


def _axis(model: onnx.ModelProto) -> None:
    model.graph.node[0].attribute[0].i = 0


def _tensor(model: onnx.ModelProto) -> None:
    model.graph.node[6].attribute[0].t.float_data[0] = 3.5


def _operator(model: onnx.ModelProto) -> None:
    model.graph.node[1].op_type = "Sigmoid"


EDITS: dict[str, Callable[[onnx.ModelProto], None]] = {
    "rename": _rename(1, "activation"),
    "longer name after a body": _rename(5, "a_much_longer_name_than_before"),
    "name removed": _rename(2, ""),
    "name given": _rename(6, "two"),
    "quoted name": _rename(0, "/model/Softmax:0"),
    "name of a function call": _rename(7, "doubled"),
    "attribute": _axis,
    "tensor attribute": _tensor,
    "operator": _operator,
}


def assert_same_view(got: SourceMap | None, want: SourceMap) -> None:
    assert got is not None
    assert got.text == want.text
    assert list(got.nodes.items()) == list(want.nodes.items())
    assert list(got.graphs.items()) == list(want.graphs.items())
    assert got.tokens == want.tokens
    assert got.outer == want.outer


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each graph view rendered whole."""
    calls: list[int] = []
    real = state_module.render_graph_view

    def counting(*args: Any, **kwargs: Any) -> SourceMap:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(state_module, "render_graph_view", counting)
    return calls


def _save(doc: Path, model: onnx.ModelProto, prior: ModelState | None) -> ModelState:
    data = model.SerializeToString()
    doc.write_bytes(data)
    return analyse(path_to_uri(doc), doc, data, Settings(), prior=prior)


def _edited(model: onnx.ModelProto, edit: Callable[[onnx.ModelProto], None]) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    edit(out)
    return out


@pytest.mark.parametrize("what", list(EDITS))
def test_the_view_after_a_one_node_rewrite_is_a_fresh_render(
    tmp_path: Path, rendered: list[int], what: str
) -> None:
    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    before = _save(doc, model, None)
    assert before.source is not None and len(rendered) == 1
    edited = _edited(model, EDITS[what])
    after = _save(doc, edited, before)
    assert after.view_base is not None, what
    view = after.source
    assert len(rendered) == 1, what  # made from the previous view
    assert_same_view(view, render_graph_view(ModelIndex(edited)))


def test_a_chain_of_rewrites(tmp_path: Path, rendered: list[int]) -> None:
    """Each view is made from the one before (kept, as the server keeps its results)."""
    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    state = _save(doc, model, None)
    assert state.source is not None
    kept = [state]
    for k, what in enumerate(EDITS):
        model = _edited(model, EDITS[what])
        state = _save(doc, model, state)
        kept.append(state)
        assert_same_view(state.source, render_graph_view(ModelIndex(model)))
        assert len(rendered) == 1, (k, what)


def test_a_previous_view_not_rendered_or_gone_renders_it_whole(
    tmp_path: Path, rendered: list[int]
) -> None:
    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    first = _save(doc, model, None)  # its view is never rendered
    edited = _edited(model, EDITS["rename"])
    second = _save(doc, edited, first)
    assert_same_view(second.source, render_graph_view(ModelIndex(edited)))
    assert len(rendered) == 1
    again = _edited(edited, EDITS["attribute"])
    third = _save(doc, again, second)
    del second
    gc.collect()
    assert_same_view(third.source, render_graph_view(ModelIndex(again)))
    assert len(rendered) == 2


def test_a_failing_shortcut_renders_the_view_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rendered: list[int]
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(state_module, "view_after_node_edit", broken)
    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    before = _save(doc, model, None)
    assert before.source is not None
    edited = _edited(model, EDITS["rename"])
    after = _save(doc, edited, before)
    assert_same_view(after.source, render_graph_view(ModelIndex(edited)))
    assert len(rendered) == 2 and not after.notes


def test_a_rewrite_after_a_metadata_only_one(tmp_path: Path, rendered: list[int]) -> None:
    """A result carried over to new metadata (``carryover``) is the previous result of the
    next one-node rewrite as any other: its analyses, findings and view are taken over,
    and the result is a fresh lint's with the new metadata in the view's header."""
    from onnxlint.walk import RuleFindings

    model = onnx.parser.parse_model(TEXT)
    doc = tmp_path / "m.onnx"
    first = _save(doc, model, None)
    assert first.source is not None
    model.producer_name = "again"
    stamped = _save(doc, model, first)
    assert stamped.carried_over and stamped.source is not None
    assert isinstance(stamped.analyses.get(RuleFindings), RuleFindings)
    calls = len(rendered)
    kept = [first, stamped]
    state = stamped
    for what in ("rename", "attribute", "operator"):
        model = _edited(model, EDITS[what])
        state = _save(doc, model, state)
        kept.append(state)
        assert not state.carried_over and state.view_base is not None, what
        assert_same_view(state.source, render_graph_view(ModelIndex(model)))
        fresh = analyse(path_to_uri(doc), doc, model.SerializeToString(), Settings())
        assert state.report.to_dict() == fresh.report.to_dict(), what
        assert dict(state.value_types.items()) == dict(fresh.value_types.items()), what
    assert len(rendered) == calls

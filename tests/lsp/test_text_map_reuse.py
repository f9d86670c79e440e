"""The text map of an edited ``.onnxtxt`` document reuses the previous map's nodes that
the edit did not move (issue 19), and is the map a fresh search gives: compared after
each edit of a sequence on a printed 1k-node model (quoted names, unnamed nodes, If
bodies, comments), and counted: an edit of one line searches for a handful of nodes."""

from __future__ import annotations

import random
import re
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.loader import load_text
from onnxlint.lsp import textmap
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.lsp.textmap import map_text_source
from onnxlint.modelfile.textedit import changed_span

NODES = 1000


def _branch(name: str, x: str, k: int) -> onnx.GraphProto:
    out = f"{name}_out"
    return helper.make_graph(
        [
            helper.make_node("Neg", [x], [f"{name}_n"], name=f"/{name}/Neg"),
            helper.make_node("Abs", [f"{name}_n"], [out]),
        ],
        name,
        [],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 4])],
    )


def _model() -> str:
    """A printed model of about ``NODES`` nodes: what an editor holds for an export."""
    nodes = []
    prev = "x"
    for i in range(NODES):
        out = f"/layers.{i}/out"
        if i % 100 == 50:
            nodes.append(
                helper.make_node(
                    "If",
                    ["cond"],
                    [out],
                    name=f"/layers.{i}/If",
                    then_branch=_branch(f"then{i}", prev, i),
                    else_branch=_branch(f"else{i}", prev, i),
                )
            )
        elif i % 7 == 3:
            nodes.append(helper.make_node("Add", [prev, "bias"], [out]))  # unnamed
        else:
            op = ("Relu", "Sigmoid", "Tanh")[i % 3]
            nodes.append(helper.make_node(op, [prev], [out], name=f"/layers.{i}/{op}_{i % 5}"))
        prev = out
    graph = helper.make_graph(
        nodes,
        "edited",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor("bias", TensorProto.FLOAT, [4], [0.5, 1.0, 1.5, 2.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    text = onnx.printer.to_text(model)
    lines = text.split("\n")
    # comments, as a user writes them (and as the map must skip)
    for k in range(len(lines) - 1, 0, -97):
        lines.insert(k, f"   # block {k}: = Relu (x) [")
    return "\n".join(lines)


def _index(text: str) -> ModelIndex | None:
    loaded = load_text(text.encode(), Limits())
    return ModelIndex(loaded.model) if loaded.model is not None else None


def _edit(text: str, rng: random.Random, k: int) -> str:
    lines = text.split("\n")
    body = [i for i, line in enumerate(lines) if re.search(r"=\s*(Relu|Sigmoid|Tanh)\b", line)]
    at = rng.choice(body)
    kind = k % 9
    line = lines[at]
    if kind == 0:  # an op changed
        lines[at] = re.sub(
            r"\b(Relu|Sigmoid|Tanh)\b", "Tanh" if "Tanh" not in line else "Relu", line
        )
    elif kind == 1:  # a comment line added
        lines.insert(at, "   # note = Sigmoid (")
    elif kind == 2:  # a node renamed
        lines[at] = re.sub(r'\["?[^\]]*"?\]', f"[renamed_{k}]", line, count=1)
    elif kind == 3:  # spaces typed inside a line
        lines[at] = line.replace(" = ", " =   ", 1)
    elif kind == 4:  # a node added before this one, reading the same input
        src = re.search(r"\(([^)]*)\)", line)
        if src:
            lines.insert(at, f"   [added_{k}] added_{k} = Neg ({src.group(1).split(',')[0]})")
    elif kind == 5:  # the name's brackets removed (the node becomes unnamed)
        lines[at] = re.sub(r'\["?[^\]]*"?\]\s*', "", line, count=1)
    elif kind == 8:  # a comment typed at a line's end (masked up to the line's end)
        lines[at] = line + f"  # why {k} = Relu ("
    elif kind == 6:  # the header: the model's docstring edited
        lines.insert(1, f'   doc_string: "edit {k}",')
    else:  # a line broken in two inside the inputs
        lines[at] = line.replace("(", "(\n      ", 1)
    return "\n".join(lines)


def _same(got: SourceMap, want: SourceMap) -> None:
    assert got.nodes == want.nodes
    assert got.tokens == want.tokens
    assert got.graphs == want.graphs
    assert got.outer == want.outer
    assert got.text == want.text
    assert got.line_starts == want.line_starts
    assert got.node_tokens == want.node_tokens
    first: dict[tuple[str, str], object] = {}
    for tok in want.tokens:
        if tok.node is not None:
            first.setdefault((tok.node, tok.name), tok)
    # each node's slice answers as the whole token list would
    assert {key: got.token_in_node(*key) for key in first} == first
    lines = want.text.split("\n")
    assert [got.line_length(k) for k in range(len(lines) + 1)] == [*map(len, lines), None]


@pytest.fixture(scope="module")
def document() -> str:
    return _model()


@pytest.mark.parametrize("comments", [True, False], ids=["with comments", "without"])
def test_an_edit_sequence_maps_as_a_fresh_search(document: str, comments: bool) -> None:
    rng = random.Random(19)
    # without comments the masked text is the text itself, until an edit types one
    text = document if comments else re.sub(r"#[^\n]*", "", document)
    assert ("#" in text) is comments
    index = _index(text)
    assert index is not None
    previous = map_text_source(text, index)
    assert len(previous.nodes) == len(index.nodes)  # every node found: the test says something
    checked = 0
    for k in range(27):
        edited = _edit(text, rng, k)
        new_index = _index(edited)
        if new_index is None:
            continue  # an edit that broke the parse: nothing is mapped
        reused = map_text_source(edited, new_index, previous)
        fresh = map_text_source(edited, new_index)
        _same(reused, fresh)
        # told where the texts differ, it reads the line starts and masked text around it
        told = map_text_source(edited, new_index, previous, changed_span(text, edited))
        _same(told, fresh)
        # the next edit reuses a reused map (each kind in turn)
        text, previous = edited, (told if k % 2 else reused)
        checked += 1
    assert checked >= 16


class _Counted:
    def __init__(self, pattern: Any, calls: list[int]) -> None:
        self.pattern, self.calls = pattern, calls

    def search(self, *args: Any) -> Any:
        self.calls.append(1)
        return self.pattern.search(*args)


def test_an_edit_of_one_line_searches_for_the_nodes_around_it(
    document: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _index(document)
    assert index is not None
    previous = map_text_source(document, index)
    lines = document.split("\n")
    at = next(i for i in range(len(lines) // 2, len(lines)) if "= Relu (" in lines[i])
    lines[at] = lines[at].replace("= Relu (", "= Sigmoid (")
    edited = "\n".join(lines)
    new_index = _index(edited)
    assert new_index is not None
    calls: list[int] = []
    original = textmap._node_pattern
    monkeypatch.setattr(
        textmap, "_node_pattern", lambda outs, op: _Counted(original(outs, op), calls)
    )
    headers: list[str] = []
    map_header = textmap._map_graph_header

    def counted_header(smap: SourceMap, text: str, g: Any, *args: Any) -> int:
        headers.append(g.path)
        return map_header(smap, text, g, *args)

    monkeypatch.setattr(textmap, "_map_graph_header", counted_header)
    reused = map_text_source(edited, new_index, previous)
    # the main graph's header (and its initializers' values) lies before the edit: not read
    assert "main" not in headers
    # the edited node and its neighbours, and the nodes with bodies (never taken over:
    # their bodies' headers are mapped with them)
    with_bodies = sum(1 for n in new_index.nodes if n.subgraphs)
    assert with_bodies == NODES // 100
    assert 1 <= len(calls) <= 3 + with_bodies
    calls.clear()
    headers.clear()
    fresh = map_text_source(edited, new_index)
    assert len(calls) == len(new_index.nodes)  # a fresh map searches for every node
    assert "main" in headers
    _same(reused, fresh)


def test_the_service_maps_an_edit_from_the_documents_previous_map(
    document: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from onnxlint.lsp.service import LintService
    from onnxlint.lsp.settings import Settings
    from onnxlint.lsp.workspace import path_to_uri

    doc = tmp_path / "m.onnxtxt"
    uri = path_to_uri(doc)
    buffer = {"text": document, "version": 1}
    given: list[SourceMap | None] = []
    spans: list[tuple[int, int, int] | None] = []
    original = textmap.map_text_source

    def recorded(
        text: str,
        index: ModelIndex,
        previous: SourceMap | None = None,
        span: tuple[int, int, int] | None = None,
    ) -> SourceMap:
        given.append(previous)
        spans.append(span)
        return original(text, index, previous, span)

    from onnxlint.lsp import workspace

    monkeypatch.setattr(workspace, "map_text_source", recorded)

    async def scenario() -> None:
        svc = LintService(
            lambda s: None, lambda u: (buffer["text"], buffer["version"]), Settings(debounce_ms=0)
        )
        await svc.schedule(uri, doc, delay=0)
        first = svc.states[uri].source
        buffer["text"] = _edit(document, random.Random(1), 0)
        buffer["version"] = 2
        await svc.schedule(uri, doc, delay=0)
        state = svc.states[uri]
        assert given == [None, first]  # the edit was mapped from the previous map
        # told where the text changed (the edit lies in one node: the splice found it)
        assert spans[0] is None and spans[1] is not None
        # only the latest map keeps what the next edit needs (memory: the masked text)
        assert first is not None and first._text_memo is None
        assert state.source is not None and state.source._text_memo is not None
        assert state.index is not None and state.source is not None
        _same(state.source, original(buffer["text"], state.index))
        svc.shutdown()

    asyncio.run(scenario())


def test_a_line_length_without_line_starts_is_read_from_the_lines() -> None:
    smap = SourceMap(text="ab\ncde\n")
    assert [smap.line_length(k) for k in range(-1, 4)] == [None, 2, 3, 0, None]
    smap.line_starts = [0, 3, 7]
    assert [smap.line_length(k) for k in range(-1, 4)] == [None, 2, 3, 0, None]

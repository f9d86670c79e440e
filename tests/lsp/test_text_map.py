"""The text map of an ``.onnxtxt`` document (issue 19): what ``onnx.printer`` writes is
mapped (quoted value names, initializer values in the graph header), and the node search
starts at the graph's body, so a header holding megabytes of values is not scanned once
per node (the cost that made a 1k-node printed document take 14 s to map)."""

from __future__ import annotations

import re
from typing import Any

import onnx
import onnx.parser
import onnx.printer
import pytest
from onnx import TensorProto, helper

from onnxlint.index import ModelIndex
from onnxlint.lsp import textmap
from onnxlint.lsp.textmap import map_text_source


def _printed(n: int, values: int) -> str:
    """``n`` Relu nodes with names that need quotes, one initializer of ``values`` floats
    in the header, as ``onnx.printer`` writes the model."""
    nodes = [
        helper.make_node("Add", ["x", "/w"], ["/l0/out"], name="/l0/Add"),
        *(
            helper.make_node("Relu", [f"/l{i}/out"], [f"/l{i + 1}/out"], name=f"/l{i + 1}/Relu")
            for i in range(n)
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [values])],
        [helper.make_tensor_value_info(f"/l{n}/out", TensorProto.FLOAT, [values])],
        [helper.make_tensor("/w", TensorProto.FLOAT, [values], [0.5] * values)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.printer.to_text(model)


def test_a_printed_document_maps_every_node_and_its_quoted_names() -> None:
    text = _printed(5, 4)
    assert '"/l1/out"' in text  # the printer quotes names that are not identifiers
    index = ModelIndex(onnx.parser.parse_model(text))
    smap = map_text_source(text, index)
    lines = text.split("\n")
    found = {
        ref.path: (lines[e.line][e.op_start : e.op_end], f'"{ref.name}"' in lines[e.line])
        for ref in index.nodes
        if (e := smap.nodes.get(ref.path)) is not None
    }
    assert found == {ref.path: (ref.op_type, True) for ref in index.nodes}
    # each output and input token sits on its name, inside the quotes
    tokens = [t for t in smap.tokens if t.name == "/l1/out"]
    assert {t.role for t in tokens} == {"output", "input"}
    for t in tokens:
        assert lines[t.line][t.start - 1 : t.end + 1] == '"/l1/out"'
    header = [t for t in smap.tokens if t.role in ("graph-input", "initializer")]
    assert {t.name for t in header} == {"x", "/w"}


def test_node_search_starts_after_the_header_values(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _printed(20, 20_000)
    body = text.index("{\n")  # the body's brace: the header's values come before it
    assert body > 50_000
    starts: list[int] = []
    original = re.compile

    class Counted:
        def __init__(self, pattern: Any) -> None:
            self.pattern = pattern

        def search(self, string: str, pos: int = 0, *args: Any) -> Any:
            starts.append(pos)
            return self.pattern.search(string, pos, *args)

    def compile_counted(pattern: str, flags: int = 0) -> Any:
        compiled = original(pattern, flags)
        return Counted(compiled) if "=" in pattern and "Relu" in pattern else compiled

    monkeypatch.setattr(textmap.re, "compile", compile_counted)
    textmap._node_pattern.cache_clear()  # compiled here, so each search is counted
    index = ModelIndex(onnx.parser.parse_model(text))
    smap = map_text_source(text, index)
    assert len(starts) == 20  # one search per Relu node
    assert min(starts) >= body  # none of them from the header
    assert len(smap.nodes) == len(index.nodes)


def test_a_second_map_of_a_document_compiles_no_node_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _printed(30, 4)
    index = ModelIndex(onnx.parser.parse_model(text))
    textmap._node_pattern.cache_clear()
    compiled: list[str] = []
    original = re.compile

    def compile_counted(pattern: str, flags: int = 0) -> Any:
        if "Relu" in pattern:
            compiled.append(pattern)
        return original(pattern, flags)

    monkeypatch.setattr(textmap.re, "compile", compile_counted)
    first = map_text_source(text, index)
    assert len(compiled) == 30  # one pattern per Relu output
    compiled.clear()
    again = map_text_source(text, index)
    assert compiled == []  # the next keystroke's map reuses them
    assert again.nodes == first.nodes and again.tokens == first.tokens


def test_tensor_values_in_the_header_are_not_read_as_names() -> None:
    # the string value "y" names the graph output: only the output itself is its token
    text = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <string[1] s = {"y"}, float[2] w = {1, 2}> {
   [add] y = Add (x, w)
}
"""
    index = ModelIndex(onnx.parser.parse_model(text))
    smap = map_text_source(text, index)
    header = [(t.name, t.role, t.start) for t in smap.tokens if t.line == 1]
    line = text.split("\n")[1]
    assert header == [
        ("x", "graph-input", line.index("x)")),
        ("y", "graph-output", line.index("y)")),
        ("s", "initializer", line.index("s =")),
        ("w", "initializer", line.index("w =")),
    ]
    assert smap.nodes["main/add"].line == 2

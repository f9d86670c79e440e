"""The language server's text documents go through the loader: records worded by the load rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlint.limits import Limits
from onnxlint.loader import load, load_text
from onnxlint.lsp.workspace import load_text as workspace_load_text
from onnxlint.modelfile.read import read_text

GOOD = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[2] x) => (float[2] y) {\n"
    "   y = Relu (x)\n"
    "}\n"
)


@pytest.mark.parametrize(
    ("what", "text", "code"),
    [
        ("empty", "", "OL003"),
        ("a parse error", GOOD.replace("Relu (x)", "Relu (x"), "OL006"),
        ("not UTF-8", GOOD.replace("Relu", "Rel\udcffu"), "OL006"),
    ],
)
def test_a_document_and_a_file_give_the_same_load_problem(
    tmp_path: Path, what: str, text: str, code: str
) -> None:
    data = text.encode("utf-8", "surrogateescape")
    path = tmp_path / "model.onnxtxt"
    path.write_bytes(data)
    from_file = load(path)
    from_document = load_text(data, Limits(), str(path))
    assert from_document.model is None and from_document.is_text, what
    assert [(p.code, p.message_id, p.args) for p in from_document.problems] == [
        (p.code, p.message_id, p.args) for p in from_file.problems
    ], what
    assert [(d.code, d.message) for d in from_document.diagnostics] == [
        (d.code, d.message) for d in from_file.diagnostics
    ], what
    assert [d.code for d in from_document.diagnostics] == [code], what


def test_a_document_without_a_header_is_a_record_worded_by_the_load_rule() -> None:
    read = read_text(b"# only a comment\nhello", Limits())
    assert read.model is None and read.diagnostics == []  # the reader words nothing
    [problem] = read.problems
    assert (problem.code, problem.message_id) == ("OL006", "default")
    assert problem.args["error"].startswith("no model header")
    [diagnostic] = load_text(b"# only a comment\nhello", Limits()).diagnostics
    assert diagnostic.code == "OL006" and problem.args["error"] in diagnostic.message


def test_the_language_server_loads_text_with_the_loader() -> None:
    assert workspace_load_text is load_text
    loaded = workspace_load_text(("# a comment\n" + GOOD).encode(), Limits())
    assert loaded.model is not None and loaded.problems == [] and loaded.diagnostics == []

"""``documents.EditedText`` applies an incremental change as pygls's own document does:
random edits of texts with long lines, empty lines, characters outside the BMP, other
line breaks (handed to pygls), edits at and past the end, in each position encoding."""

from __future__ import annotations

import random

import pytest
from lsprotocol import types as lsp
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import PositionCodec

from onnxlint.lsp.documents import EditedText, EditedWorkspace, use_edited_documents

TEXTS = {
    "plain": "<ir_version: 8>\ng (float[N] x) => (float[N] y) {\n   [a] y = Relu (x)\n\n}\n",
    "no final newline": "line one\nline two\n\nlast line",
    "wide characters": 'g () => () {\n   [ré😀lu] y = Relu ("x😀")\n}\n',
    "carriage returns": "a\r\nb\r\nc\rd\n",
    "form feed": "a\nb\x0cc\nd\n",
    "empty": "",
}

PIECES = ["", "x", "😀", "é", "\n", "\n\n  ", "abc\ndef", "\r\n", "\u2028"]


def _random_change(rng: random.Random, text: str) -> lsp.TextDocumentContentChangePartial:
    lines = max(1, text.count("\n") + 1)
    a_line = rng.randrange(lines + 2)  # sometimes at or past the end
    b_line = a_line + rng.choice([0, 0, 0, 1, 2])
    a = lsp.Position(a_line, rng.randrange(12))
    b = lsp.Position(
        b_line, rng.randrange(12) if b_line != a_line else a.character + rng.randrange(4)
    )
    return lsp.TextDocumentContentChangePartial(range=lsp.Range(a, b), text=rng.choice(PIECES))


@pytest.mark.parametrize("encoding", list(lsp.PositionEncodingKind))
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_random_edits_give_what_pygls_gives(name: str, encoding: lsp.PositionEncodingKind) -> None:
    rng = random.Random(f"{name}-{encoding}")
    for _ in range(40):
        ours = EditedText(
            "file:///m.onnxtxt", TEXTS[name], 1, position_codec=PositionCodec(encoding)
        )
        theirs = TextDocument(
            "file:///m.onnxtxt", TEXTS[name], 1, position_codec=PositionCodec(encoding)
        )
        for step in range(12):
            change = _random_change(rng, theirs.source)
            copy = lsp.TextDocumentContentChangePartial(range=change.range, text=change.text)
            theirs.apply_change(change)
            ours.apply_change(copy)
            assert ours.source == theirs.source, (name, step, change)
            assert ours.lines == theirs.lines


def test_a_new_workspace_opens_edited_documents() -> None:
    workspace = Workspace(None)
    use_edited_documents(workspace)
    assert isinstance(workspace, EditedWorkspace)
    workspace.put_text_document(lsp.TextDocumentItem("file:///m.onnxtxt", "onnxtxt", 1, "a\nb\n"))
    document = workspace.get_text_document("file:///m.onnxtxt")
    assert isinstance(document, EditedText)
    change = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(1, 0), lsp.Position(1, 1)), text="c"
    )
    document.apply_change(change)
    assert document.source == "a\nc\n"


def test_an_edit_inside_a_plain_text_is_cut_in_without_pygls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used: list[int] = []
    original = TextDocument._apply_incremental_change

    def counted(self: TextDocument, change: lsp.TextDocumentContentChangePartial) -> None:
        used.append(1)
        original(self, change)

    monkeypatch.setattr(TextDocument, "_apply_incremental_change", counted)
    text = "\n".join(f"   [n{k}] v{k} = Relu (v{k - 1})" for k in range(2000)) + "\n"
    document = EditedText("file:///m.onnxtxt", text, 1)
    for k in (5, 1000, 1999):
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(k, 4), lsp.Position(k, 4 + len(f"n{k}"))), text="renamed"
        )
        document.apply_change(change)
        assert f"[renamed] v{k} = Relu" in document.source
    assert used == []
    past = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(2000, 0), lsp.Position(2000, 0)), text="tail"
    )
    document.apply_change(past)  # at the end: pygls's own code
    assert used == [1] and document.source.endswith("\ntail")

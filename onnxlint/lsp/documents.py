"""Open documents that take an incremental change without rewriting every line.

pygls applies a change by splitting the whole document into lines and writing each one
again: 7 ms of every keystroke in a printed 1k-node model (6.5 MB of text), before the
lint starts. :class:`EditedText` cuts the text at the change instead, reading only the
lines it touches, and gives what pygls gives: the line strings it hands pygls's
position codec are the ones pygls would split, so columns convert alike. A document
with a line break other than ``\\n`` (``str.splitlines`` also breaks at ``\\r``, form
feeds and Unicode separators), and an edit at or past the end, go to pygls's own code.
``tests/lsp/test_documents.py`` compares the two on random edits.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp
from pygls.workspace import TextDocument, Workspace

#: the line breaks ``str.splitlines`` knows besides ``\n``
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class EditedText(TextDocument):
    """A pygls text document whose incremental changes are cut in, not rewritten."""

    #: ``(id of the text, whether \n is its only line break)``, for the latest text
    _plain: tuple[int, bool] | None = None

    def _apply_incremental_change(self, change: lsp.TextDocumentContentChangePartial) -> None:
        source = self._source  # None: a document pygls reads from its file
        cut = None
        if (
            source is not None
            and self._only_newlines(source)
            and _OTHER_BREAKS.search(change.text) is None
        ):
            cut = self._cut(source, change)
        if source is None or cut is None:
            super()._apply_incremental_change(change)
            self._plain = None
            return
        self._source = source[: cut[0]] + change.text + source[cut[1] :]
        self._plain = (id(self._source), True)  # the change brought no other break

    def _only_newlines(self, source: str) -> bool:
        known = self._plain
        if known is None or known[0] != id(source):
            known = self._plain = (id(source), _OTHER_BREAKS.search(source) is None)
        return known[1]

    def _cut(
        self, source: str, change: lsp.TextDocumentContentChangePartial
    ) -> tuple[int, int] | None:
        """The offsets the change replaces, converted from the client's columns by pygls's
        codec on the lines pygls would give it; None: a range at or past the last line."""
        rng = change.range
        first = _line(source, rng.start.line, 0)
        if first is None:
            return None
        last = first
        if rng.end.line != rng.start.line:
            found = _line(source, rng.end.line - rng.start.line, first[0])
            if found is None:
                return None
            last = found
        lines = [source[first[0] : first[1]]]
        if last is not first:
            lines.append(source[last[0] : last[1]])
        codec = self._position_codec
        start = codec.position_from_client_units(lines, lsp.Position(0, rng.start.character))
        end = codec.position_from_client_units(
            lines, lsp.Position(len(lines) - 1, rng.end.character)
        )
        return first[0] + start.character, last[0] + end.character


def _line(source: str, skip: int, at: int) -> tuple[int, int] | None:
    """The ``(start, end)`` of the line ``skip`` lines after the one starting at ``at``
    (its newline included, as ``str.splitlines(True)`` keeps it); None when the text has
    no such line (it ends before, or right after a final newline)."""
    for _ in range(skip):
        newline = source.find("\n", at)
        if newline < 0:
            return None
        at = newline + 1
    if at >= len(source):
        return None
    newline = source.find("\n", at)
    return at, (len(source) if newline < 0 else newline + 1)


class EditedWorkspace(Workspace):
    """A pygls workspace whose text documents are :class:`EditedText`."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return EditedText(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def use_edited_documents(workspace: Any) -> None:
    """Make ``workspace`` (pygls's, just created) open :class:`EditedText` documents; a
    workspace of another kind is left as it is."""
    if type(workspace) is Workspace:
        workspace.__class__ = EditedWorkspace

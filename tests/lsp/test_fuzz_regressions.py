"""Language-server failures the protocol fuzzer (``test_fuzz_server.py``) found, one test each."""

from __future__ import annotations

import asyncio
from pathlib import Path

from onnxlint.lsp.service import LintService
from onnxlint.lsp.workspace import ModelState, path_to_uri
from tests.lsp.models import GOOD


def test_lone_surrogates_from_the_client_are_invalid_utf8_not_a_silent_failure(
    tmp_path: Path,
) -> None:
    """A mutated ``.onnxtxt`` whose invalid UTF-8 a client sent as lone surrogates (JSON
    ``\\udcff``) made the text encoding raise in the lint task: no diagnostics, no log."""
    text = GOOD.replace("relu0", "r\udcff\udcfe")
    path = tmp_path / "doc.onnxtxt"
    uri = path_to_uri(path)
    published: list[ModelState] = []
    service = LintService(published.append, lambda u: (text, 3) if u == uri else None)

    async def run() -> None:
        await service.schedule(uri, path, delay=0)

    try:
        asyncio.run(run())
    finally:
        service.shutdown()
    (state,) = published
    assert state.version == 3
    assert state.report.fatal
    assert [d.code for d in state.report.diagnostics] == ["OL006"]
    assert "UTF-8" in state.report.diagnostics[0].message

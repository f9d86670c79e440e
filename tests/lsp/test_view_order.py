"""The graph view over stdio: its text first, its diagnostics after, never stale ones.

A view requested for bytes the server has not linted yet is answered from the
bytes alone; findings of the previous bytes are withdrawn from the view before
the reply (their lines no longer mean anything) and the lint of the new bytes
publishes after it, on the file and on the view, without any watcher event.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from onnxlint.lsp.workspace import graph_uri, path_to_uri
from tests.lsp.models import BAD, GOOD, write_model
from tests.lsp.session import server_config, start_session
from tests.lsp.test_stress import Recording, settled, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="function")
TIMEOUT = 60.0


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "onnxlint.toml").write_text('select = ["OL0", "OL1", "OL2"]\n')
    write_model(ws / "m.onnx", BAD)
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.diagnostics = Recording()

    await start_session(lsp_client, ws, {"debounceMs": 0})
    yield
    await lsp_client.shutdown_session()


async def view(client: LanguageClient, path: Path) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async("onnxlint/graphView", {"uri": path_to_uri(path)}),
        TIMEOUT,
    )


async def test_view_of_new_bytes_withdraws_old_findings_then_publishes_new_ones(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "m.onnx"
    uri, guri = path_to_uri(path), graph_uri(path)
    rec: Recording = client.diagnostics  # type: ignore[assignment]
    await wait_until(lambda: "OL204" in (rec.last(uri) or []))

    first = await view(client, path)
    assert "FancyOp" in first.text
    await wait_until(lambda: "OL204" in (rec.last(guri) or []))
    line = next(n.line for n in first.nodes if n.path == "main/mystery0")
    (on_node,) = [d for d in client.diagnostics[guri] if d.code == "OL204"]
    assert on_node.range.start.line == line

    published_before = rec.count(uri)
    write_model(path, GOOD)  # no watcher event: only the view request tells the server
    # what arrives from here on: the withdrawal (sent before the reply), then the lint of
    # the new bytes. Counted from before the request: the lint of a tiny model can be
    # published before the test resumes from the reply (the flake under load).
    asked = len(rec.history)
    second = await view(client, path)
    assert "FancyOp" not in second.text and "Relu" in second.text
    # withdrawn before the reply: the old finding never sits on the new text
    assert rec.last(guri) == []
    await wait_until(lambda: rec.count(uri) > published_before)
    await settled(rec)
    later = [(u, codes) for u, codes in rec.history[asked:] if u in (uri, guri)]
    assert later[0] == (guri, [])  # the withdrawal comes first
    assert (uri, []) in later  # the lint of the new bytes published, with no watcher event
    assert all("OL204" not in codes for _, codes in later)
    # one set of problems: the open view's, none on the file
    assert "OL204" not in (rec.last(guri) or []) and rec.last(uri) == []

    # the same bytes again: answered from the cache, diagnostics re-sent from the known lint
    n = rec.count(guri)
    third = await view(client, path)
    assert third.text == second.text
    await wait_until(lambda: rec.count(guri) > n)
    assert rec.last(uri) == []

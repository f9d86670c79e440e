"""Latency from a model changing on disk to fresh diagnostics, on light_resnet50 (slow).

Measured over stdio with pytest-lsp: the time from writing a changed copy of
the model and sending ``workspace/didChangeWatchedFiles`` (what the editor's
file watcher does) to the server's ``publishDiagnostics`` for that file. The
figures are printed (``-s``) and kept loose in the assertion: this machine is
shared, the number is for the report, the bound only catches a blocked loop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import onnx
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from onnxlint.lsp.workspace import path_to_uri
from tests.lsp.session import start_session

pytestmark = [pytest.mark.asyncio(loop_scope="function"), pytest.mark.slow]

RESNET = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
ROUNDS = 5


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "onnxlint", "lsp"], server_env=dict(os.environ)
    ),
)
async def client(lsp_client: LanguageClient, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if not RESNET.is_file():
        pytest.skip("the onnx wheel has no light_resnet50.onnx")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "resnet.onnx").write_bytes(RESNET.read_bytes())
    lsp_client.ws = ws  # type: ignore[attr-defined]

    # the tests send the change events themselves
    await start_session(lsp_client, ws, {"debounceMs": request.param})
    yield
    await lsp_client.shutdown_session()


async def _wait(predicate: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.002)


@pytest.mark.parametrize("client", [0, 300], indirect=True, ids=["debounce-0ms", "debounce-300ms"])
async def test_change_to_diagnostics_latency(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "resnet.onnx"
    uri = path_to_uri(path)
    await _wait(lambda: uri in client.diagnostics)
    model = onnx.load(str(path))
    samples = []
    for i in range(ROUNDS):
        model.producer_version = f"edit-{i}"  # new content: the cache cannot answer
        data = model.SerializeToString()
        client.diagnostics.pop(uri, None)
        t0 = time.monotonic()
        path.write_bytes(data)
        client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(
                changes=[lsp.FileEvent(uri=uri, type=lsp.FileChangeType.Changed)]
            )
        )
        await _wait(lambda: uri in client.diagnostics)
        samples.append(time.monotonic() - t0)
    median = statistics.median(samples)
    print(
        f"\nlight_resnet50 change -> diagnostics: median {median * 1000:.0f} ms, "
        f"min {min(samples) * 1000:.0f} ms, max {max(samples) * 1000:.0f} ms over {ROUNDS} edits"
    )
    assert median < 30.0

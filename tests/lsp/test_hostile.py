"""The language server under hostile input (issue #20, item 3).

Every document, open or on disk, text or binary, reaches the lint through
``onnxlint.loader`` and its limits: deep nesting, invalid UTF-8, a 3 MB line, a
FIFO or ``/dev/zero`` named like a model, a model replaced by a FIFO while it
is open. Each gets a diagnostic; the server neither crashes nor hangs. The
end-to-end tests drive the real server over stdio, so a segfault or a blocked
lint thread fails the test instead of the test run.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from onnxlint.limits import Limits
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import (
    analyse,
    build_view,
    graph_uri,
    load_text,
    path_to_uri,
    read_model_bytes,
)
from tests.lsp.models import BAD, GOOD, OPSET, write_model
from tests.lsp.session import server_config, start_session
from tests.lsp.test_server_e2e import graph_view, wait_until

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
needs_dev_zero = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")

#: If bodies nested this deep: onnx.parser overflows the C stack (SIGSEGV) long before
DEEP_LEVELS = 3000


def deeply_nested_text(levels: int = DEEP_LEVELS) -> str:
    inner = "t = Identity (x)"
    for _ in range(levels):
        inner = (
            f"t = If (c) <then_branch = g () => (float[1] t) {{ {inner} }}, "
            f"else_branch = h () => (float[1] t) {{ t = Identity (x) }}>"
        )
    return f"{OPSET}\ndeep (float[1] x, bool c) => (float[1] t) {{\n{inner}\n}}\n"


def long_line_text(size: int = 3_000_000) -> str:
    """A valid model whose graph sits on one line of ``size`` characters (a long doc string)."""
    doc = "x" * size
    return f"{OPSET}\nlong (float[1] x) => (float[1] y) {{ y = Relu (x) }} # {doc}\n"


def _codes(diags: list[Any]) -> list[str]:
    return sorted(str(d.code) for d in diags)


# ---------------------------------------------------------------------------
# Service functions


@needs_fifo
def test_read_model_bytes_never_reads_a_fifo_or_a_device(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    assert read_model_bytes(fifo, Limits()) is None  # returns at once: no writer needed
    assert read_model_bytes(tmp_path, Limits()) is None
    assert read_model_bytes(tmp_path / "missing.onnx", Limits()) is None
    if Path("/dev/zero").exists():
        zero = tmp_path / "zero.onnx"
        zero.symlink_to("/dev/zero")
        assert read_model_bytes(zero, Limits()) is None
    small = tmp_path / "small.onnx"
    small.write_bytes(b"12345")
    assert read_model_bytes(small, Limits()) == b"12345"
    assert read_model_bytes(small, Limits(max_file_bytes=4)) is None


@pytest.mark.parametrize(
    ("what", "data", "code"),
    [
        ("deep nesting", deeply_nested_text().encode(), "OL005"),
        ("invalid UTF-8", OPSET.encode() + b"\ng (float[1] \xff\xfe x) => () {}\n", "OL006"),
        ("no model header", b"g (float[1] x) => (float[1] y) { y = Relu (x) }\n", "OL006"),
        ("empty", b"  \n", "OL003"),
        ("truncated", GOOD.encode()[:-3], "OL006"),
    ],
)
def test_text_documents_go_through_the_loader(
    tmp_path: Path, what: str, data: bytes, code: str
) -> None:
    path = tmp_path / "doc.onnxtxt"
    state = analyse(path_to_uri(path), path, data, Settings())
    assert state.report.fatal
    assert _codes(state.report.diagnostics) == [code], what


def test_leading_comments_keep_lines_and_a_long_line_is_linted(tmp_path: Path) -> None:
    path = tmp_path / "doc.onnxtxt"
    text = "# a comment\n\n# another\n" + BAD
    state = analyse(path_to_uri(path), path, text.encode(), Settings())
    assert not state.report.fatal
    assert state.source is not None
    assert state.source.nodes["main/mystery0"].line == text.splitlines().index(
        "   [mystery0] y = FancyOp (r)"
    )
    broken = GOOD.replace("Relu (x)", "Relu (x")
    plain = load_text(broken.encode(), Limits()).diagnostics
    commented = load_text(("# header\n" + broken).encode(), Limits()).diagnostics
    assert [d.code for d in plain] == [d.code for d in commented] == ["OL006"]
    # the parse error keeps its line: one further down, after the comment
    assert "line: 4 " in plain[0].message and "line: 5 " in commented[0].message
    state = analyse(path_to_uri(path), path, long_line_text().encode(), Settings())
    assert not state.report.fatal


@needs_fifo
def test_a_fifo_named_like_a_model_gets_ol001_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    state = analyse(path_to_uri(fifo), fifo, None, Settings())
    assert _codes(state.report.diagnostics) == ["OL001"]
    view = build_view(fifo, None, Settings())
    assert "OL001" in view.text and "not a regular file" in view.text


def test_the_empty_file_view_names_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    view = build_view(empty, None, Settings())
    assert "OL003" in view.text and "empty.onnx" in view.text and "<bytes>" not in view.text


def test_result_id_changes_with_the_config_file_and_confirmation(tmp_path: Path) -> None:
    model = write_model(tmp_path / "bad.onnx", BAD)
    published: list[Any] = []
    service = LintService(published.append, lambda uri: None)

    async def run() -> list[str]:
        ids = []
        uri = path_to_uri(model)
        state = await service.analyse_now(uri, model)
        assert state is not None
        ids.append(state.result_id)
        (tmp_path / "onnxlint.toml").write_text('ignore = ["OL204"]\n')
        state = await service.analyse_now(uri, model)
        assert state is not None
        ids.append(state.result_id)
        service.settings = Settings(confirm=True)
        state = await service.analyse_now(uri, model)
        assert state is not None
        ids.append(state.result_id)
        return ids

    try:
        ids = asyncio.run(run())
    finally:
        service.shutdown()
    assert len(set(ids)) == 3, ids


# ---------------------------------------------------------------------------
# The real server over stdio

TIMEOUT = 60.0


def _make_hostile_workspace(ws: Path) -> None:
    (ws / "onnxlint.toml").write_text('select = ["OL0", "OL1", "OL2"]\n')
    write_model(ws / "good.onnx", GOOD)
    (ws / "deep.onnxtxt").write_text(deeply_nested_text())
    (ws / "latin1.onnxtxt").write_bytes(GOOD.encode().replace(b"good", b"g\xe9\xff"))
    (ws / "long.onnxtxt").write_text(long_line_text())
    if hasattr(os, "mkfifo"):
        os.mkfifo(ws / "pipe.onnx")
    if Path("/dev/zero").exists():
        (ws / "zero.onnx").symlink_to("/dev/zero")


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ws = tmp_path / "ws"
    ws.mkdir()
    _make_hostile_workspace(ws)
    lsp_client.ws = ws  # type: ignore[attr-defined]
    await start_session(lsp_client, ws)
    yield
    await lsp_client.shutdown_session()


async def _alive(client: LanguageClient) -> None:
    """The server still answers requests (its loop is not blocked, it did not crash)."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    uri = path_to_uri(ws / "good.onnx")
    symbols = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(
                text_document=lsp.TextDocumentIdentifier(uri=graph_uri(ws / "good.onnx"))
            )
        ),
        TIMEOUT,
    )
    assert symbols, uri


@pytest.mark.asyncio(loop_scope="function")
async def test_hostile_workspace_files_get_diagnostics(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    expected = {"deep.onnxtxt": "OL005", "latin1.onnxtxt": "OL006"}
    if (ws / "pipe.onnx").exists():
        expected["pipe.onnx"] = "OL001"
    if (ws / "zero.onnx").is_symlink():
        expected["zero.onnx"] = "OL001"
    for name, code in expected.items():
        uri = path_to_uri(ws / name)
        diags = await wait_until(lambda u=uri: client.diagnostics.get(u), TIMEOUT)
        assert _codes(diags) == [code], name
    long = await wait_until(lambda: path_to_uri(ws / "long.onnxtxt") in client.diagnostics)
    assert long
    assert not any(
        str(d.code).startswith("OL00") for d in client.diagnostics[path_to_uri(ws / "long.onnxtxt")]
    )
    await _alive(client)


@pytest.mark.asyncio(loop_scope="function")
async def test_hostile_documents_opened_in_the_editor(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    uri = path_to_uri(ws / "edited.onnxtxt")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="onnx", version=1, text=GOOD)
        )
    )
    await wait_until(lambda: uri in client.diagnostics)
    for version, text, code in (
        (2, deeply_nested_text(), "OL005"),
        (3, long_line_text(), None),
        (4, "", "OL003"),
    ):
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        if code is None:  # linted: no load finding left from the version before
            await wait_until(
                lambda: not any(c.startswith("OL00") for c in _codes(client.diagnostics[uri]))
            )
        else:
            await wait_until(lambda c=code: _codes(client.diagnostics[uri]) == [c])
    await _alive(client)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize(
    "replace",
    [
        pytest.param(_fifo, id="fifo", marks=needs_fifo),
        pytest.param(_dev_zero, id="dev-zero", marks=needs_dev_zero),
    ],
)
@pytest.mark.asyncio(loop_scope="function")
async def test_a_model_replaced_while_its_view_is_open(
    client: LanguageClient, replace: Any
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    model = ws / "swap.onnx"
    write_model(model, BAD)
    uri = path_to_uri(model)
    reply = await graph_view(client, model)
    assert reply["uri"] == graph_uri(model) and reply["nodes"]
    model.unlink()
    replace(model)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri, type=lsp.FileChangeType.Changed)]
        )
    )
    # the view is open: the model's problems are shown there
    guri = graph_uri(model)
    await wait_until(lambda: _codes(client.diagnostics.get(guri, [])) == ["OL001"])
    assert _codes(client.diagnostics.get(uri, [])) == []
    reply = await graph_view(client, model)
    assert "not a regular file" in reply["text"]
    await _alive(client)

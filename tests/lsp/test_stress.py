"""The language server under stress (issue #10): real JSON-RPC over stdio.

A burst of 100 changes to one model, a model deleted while being linted,
malformed JSON-RPC frames (on a raw subprocess), requests for documents never
opened, ``$/cancelRequest`` for a request in flight, and the server's memory
over 200 re-lints of the same file. Figures are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import onnx
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from onnxlint.lsp.workspace import graph_uri, path_to_uri
from tests.lsp.models import GOOD, OPSET
from tests.lsp.session import server_config, start_session

pytestmark = pytest.mark.slow
ASYNC = pytest.mark.asyncio(loop_scope="function")
RESNET = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"

TIMEOUT = 60.0
CONFIG = 'select = ["OL0", "OL1", "OL2"]\n'

# an initializer nothing reads: OL105
UNUSED = f"""{OPSET}
unused (float[N,4] x) => (float[N,4] y) <float[2] w = {{1.0, 2.0}}> {{
   [relu0] y = Relu (x)
}}
"""


def model_bytes(text: str, tag: str) -> bytes:
    """The model, serialized with a distinct producer version (new content every time)."""
    model = onnx.parser.parse_model(text)
    model.producer_version = tag
    return model.SerializeToString()


class Recording(dict):
    """``client.diagnostics`` that also keeps every publish, in arrival order."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[tuple[str, list[str]]] = []

    def __setitem__(self, uri: str, diags: Any) -> None:
        self.history.append((uri, sorted(str(d.code) for d in diags)))
        super().__setitem__(uri, diags)

    def count(self, uri: str) -> int:
        return sum(1 for u, _ in self.history if u == uri)

    def last(self, uri: str) -> list[str] | None:
        for u, c in reversed(self.history):
            if u == uri:
                return c
        return None


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "onnxlint.toml").write_text(CONFIG)
    (ws / "m.onnx").write_bytes(model_bytes(GOOD, "start"))
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.diagnostics = Recording()

    # no coalescing: every change races; the tests send the change events themselves
    await start_session(lsp_client, ws, {"debounceMs": 0})
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def wait_until(predicate: Any, timeout: float = TIMEOUT) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the server")
        await asyncio.sleep(0.01)


async def settled(rec: Recording, quiet: float = 1.5, timeout: float = TIMEOUT) -> None:
    """Wait until no publish has arrived for ``quiet`` seconds (stale lints would show)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    n, since = len(rec.history), loop.time()
    while loop.time() - since < quiet:
        await asyncio.sleep(0.05)
        if len(rec.history) != n:
            n, since = len(rec.history), loop.time()
        if loop.time() > deadline:
            raise AssertionError("the server never stopped publishing")


def changed(client: LanguageClient, uri: str, kind: lsp.FileChangeType) -> None:
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=uri, type=kind)])
    )


async def graph_view(client: LanguageClient, path: Path) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async("onnxlint/graphView", {"uri": path_to_uri(path)}),
        TIMEOUT,
    )


async def alive(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    good = ws / "alive.onnx"
    if not good.exists():
        good.write_bytes(model_bytes(GOOD, "alive"))
    view = await graph_view(client, good)
    assert view.error is None and "Relu" in view.text


@ASYNC
async def test_burst_of_100_changes_publishes_the_latest_content_only(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    rec: Recording = client.diagnostics  # type: ignore[assignment]
    path = ws / "m.onnx"
    uri = path_to_uri(path)
    await wait_until(lambda: uri in rec)
    assert rec.last(uri) == []
    before = rec.count(uri)
    t0 = time.monotonic()
    for i in range(100):  # 0: finding, 1: clean, ..., 99: clean -> then one more, finding
        path.write_bytes(model_bytes(UNUSED if i % 2 == 0 else GOOD, f"burst-{i}"))
        changed(client, uri, lsp.FileChangeType.Changed)
    sent = time.monotonic() - t0
    # the 100th change (i = 99) is clean; the final content is that clean model
    await wait_until(lambda: rec.count(uri) > before and rec.last(uri) == [])
    await settled(rec)
    elapsed = time.monotonic() - t0
    published = rec.count(uri) - before
    print(
        f"\nburst: 100 changes sent in {sent * 1000:.0f} ms, settled after {elapsed:.2f} s, "
        f"{published} publishes for the file"
    )
    assert rec.last(uri) == [], rec.history[-5:]
    # and the other way round: end on the content with a finding
    before = rec.count(uri)
    for i in range(100):
        path.write_bytes(model_bytes(GOOD if i % 2 == 0 else UNUSED, f"burst2-{i}"))
        changed(client, uri, lsp.FileChangeType.Changed)
    await wait_until(lambda: rec.count(uri) > before and rec.last(uri) == ["OL105"])
    await settled(rec)
    assert rec.last(uri) == ["OL105"], rec.history[-5:]
    # pull diagnostics agree with what was published last
    pulled = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(uri))
    )
    assert [d.code for d in pulled.items] == ["OL105"]
    await alive(client)


@ASYNC
async def test_file_deleted_while_being_linted(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    rec: Recording = client.diagnostics  # type: ignore[assignment]
    path = ws / "m.onnx"
    uri = path_to_uri(path)
    await wait_until(lambda: uri in rec)
    for round_ in range(10):
        path.write_bytes(model_bytes(UNUSED, f"doomed-{round_}"))
        changed(client, uri, lsp.FileChangeType.Changed)
        path.unlink()  # gone before (or while) the server reads it
        changed(client, uri, lsp.FileChangeType.Deleted)
    await settled(rec)
    # the deleted file ends with no diagnostics (cleared, never a stale finding)
    assert rec.last(uri) == [], rec.history[-5:]
    # deleted between the change event and the lint, with no Deleted event at all
    other = ws / "gone.onnx"
    other.write_bytes(model_bytes(UNUSED, "gone"))
    changed(client, path_to_uri(other), lsp.FileChangeType.Created)
    other.unlink()
    await settled(rec)
    assert "OL105" not in (rec.last(path_to_uri(other)) or [])
    await alive(client)


@ASYNC
async def test_requests_for_unknown_documents(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    missing = ws / "never" / "opened.onnx"
    uri = path_to_uri(missing)
    outcomes: dict[str, Any] = {}

    async def attempt(name: str, coro: Any) -> None:
        try:
            outcomes[name] = await asyncio.wait_for(coro, TIMEOUT)
        except asyncio.TimeoutError:
            raise
        except Exception as exc:  # a JSON-RPC error response is acceptable
            outcomes[name] = exc

    await attempt(
        "hover",
        client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0))
        ),
    )
    await attempt(
        "symbols",
        client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
        ),
    )
    await attempt(
        "graph-symbols",
        client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(graph_uri(missing)))
        ),
    )
    await attempt(
        "definition",
        client.text_document_definition_async(
            lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(3, 1))
        ),
    )
    await attempt("graphView", graph_view(client, missing))
    await attempt(
        "graphView-bad-uri",
        client.protocol.send_request_async("onnxlint/graphView", {"uri": "untitled:Nope"}),
    )
    await attempt("graphView-no-uri", client.protocol.send_request_async("onnxlint/graphView", {}))
    print("\nunknown documents:", {k: type(v).__name__ for k, v in outcomes.items()})
    assert outcomes["hover"] is None or isinstance(outcomes["hover"], Exception)
    for name in ("symbols", "graph-symbols"):
        assert not outcomes[name] or isinstance(outcomes[name], Exception), outcomes[name]
    assert outcomes["definition"] is None or isinstance(outcomes["definition"], Exception)
    for name in ("graphView", "graphView-bad-uri", "graphView-no-uri"):
        view = outcomes[name]
        assert isinstance(view, Exception) or (view.uri is None and view.error), view
    await alive(client)


@ASYNC
async def test_cancel_request_in_flight(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    outcomes = []
    for i in range(5):
        path = ws / f"c{i}.onnx"
        if RESNET.is_file() and i < 3:  # large enough to still be in flight when cancelled
            big = onnx.load(str(RESNET))
            big.producer_version = f"cancel-{i}-{time.time_ns()}"  # new content: no cache hit
            path.write_bytes(big.SerializeToString())
        else:
            path.write_bytes(model_bytes(UNUSED, f"cancel-{i}"))
        msg_id = f"to-cancel-{i}"
        fut = client.protocol.send_request_async(
            "onnxlint/graphView", {"uri": path_to_uri(path)}, msg_id=msg_id
        )
        client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
        try:
            result = await asyncio.wait_for(fut, 10)
            outcomes.append("answered" if result.error is None else "error-result")
        except asyncio.TimeoutError:
            outcomes.append("no-response")
        except Exception as exc:
            outcomes.append(type(exc).__name__)
    # cancel an id the server never saw, and a pull request too
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="never-sent"))
    fut = client.protocol.send_request_async(
        "textDocument/diagnostic",
        lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(path_to_uri(ws / "c0.onnx"))),
        msg_id="pull-cancel",
    )
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="pull-cancel"))
    try:
        await asyncio.wait_for(fut, 10)
        outcomes.append("answered")
    except asyncio.TimeoutError:
        outcomes.append("no-response")
    except Exception as exc:
        outcomes.append(type(exc).__name__)
    print("\ncancelled requests:", outcomes)
    assert "no-response" not in outcomes, outcomes  # LSP: a cancelled request still gets a reply
    await alive(client)
    view = await graph_view(client, ws / "c1.onnx")
    assert (view.error is None and "Conv" in view.text) or "Relu" in view.text


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@ASYNC
async def test_memory_bounded_over_200_relints(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    rec: Recording = client.diagnostics  # type: ignore[assignment]
    path = ws / "m.onnx"
    uri = path_to_uri(path)
    pid = client._server.pid  # type: ignore[union-attr]
    await wait_until(lambda: uri in rec)

    async def relint(i: int) -> None:
        text = UNUSED if i % 2 else GOOD
        n = rec.count(uri)
        path.write_bytes(model_bytes(text, f"relint-{i}"))
        changed(client, uri, lsp.FileChangeType.Changed)
        want = ["OL105"] if i % 2 else []
        await wait_until(lambda: rec.count(uri) > n and rec.last(uri) == want)

    for i in range(20):  # warm-up
        await relint(i)
    start = _rss_kb(pid)
    t0 = time.monotonic()
    for i in range(20, 220):
        await relint(i)
    end = _rss_kb(pid)
    growth_mb = (end - start) / 1024
    print(
        f"\nserver RSS after 20 warm-up re-lints {start / 1024:.1f} MB, after 200 more "
        f"{end / 1024:.1f} MB (growth {growth_mb:+.1f} MB), "
        f"{(time.monotonic() - t0) / 200 * 1000:.0f} ms per re-lint"
    )
    assert growth_mb < 50, growth_mb
    await alive(client)


# -- malformed JSON-RPC, on a raw subprocess ----------------------------------------------
class RawServer:
    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "ONNXLINT_LSP_LOG": "warning"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "onnxlint", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):  # type: ignore[union-attr]
            self.stderr += chunk

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                key, _, value = line.decode().partition(":")
                headers[key.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def response(self, msg_id: Any, timeout: float = 20.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.messages.get(timeout=0.2)
            except queue.Empty:
                continue
            if msg.get("id") == msg_id and "method" not in msg:
                return msg
        return None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


GARBAGE = {
    "bytes-without-header": b"\x00\xff garbage \xde\xad\xbe\xef\r\n\r\n",
    "non-numeric-content-length": b"Content-Length: abc\r\n\r\n{}",
    "invalid-json": frame(b"{not json"),
    "invalid-utf8": frame(b'{"jsonrpc": "2.0", "method": "\xff\xfe"}'),
    "json-not-an-object": frame(b"[1,2,3]"),
    "object-without-method": frame(b'{"jsonrpc": "2.0"}'),
    "request-with-bad-params": frame(
        b'{"jsonrpc": "2.0", "id": "b1", "method": "textDocument/hover", "params": 7}'
    ),
    "unknown-method-request": frame(b'{"jsonrpc": "2.0", "id": "u1", "method": "no/such"}'),
}


#: pygls reads headers line by line: after a header it cannot parse, the bytes of that frame's
#: body are glued to the next header line, so the next (valid) frame is lost too (observed).
DESYNCS = {"non-numeric-content-length"}


def _init(server: RawServer, ws: Path) -> None:
    server.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": path_to_uri(ws), "capabilities": {}},
        }
    )
    init = server.response(1, timeout=TIMEOUT)
    assert init is not None and "capabilities" in init["result"]
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


def _graph_request(server: RawServer, ws: Path, msg_id: int) -> bool:
    server.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "onnxlint/graphView",
            "params": {"uri": path_to_uri(ws / "m.onnx")},
        }
    )
    reply = server.response(msg_id)
    return reply is not None and "Relu" in (reply.get("result") or {}).get("text", "")


@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_malformed_json_rpc(tmp_path: Path, garbage: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.onnx").write_bytes(model_bytes(GOOD, "raw"))
    server = RawServer(ws)
    try:
        _init(server, ws)
        server.raw(GARBAGE[garbage])
        answered = _graph_request(server, ws, 2)
        assert server.proc.poll() is None, server.stderr[-2000:]  # never exits
        if garbage in DESYNCS:
            # the valid request right after the bad header is swallowed (pygls framing);
            # the server is still up, and answers once the stream is back in step
            assert not answered
            server.raw(b"\r\n")
            answered = _graph_request(server, ws, 3)
        assert answered, (garbage, server.stderr[-2000:])
        # and it still shuts down cleanly
        server.send({"jsonrpc": "2.0", "id": 99, "method": "shutdown"})
        assert server.response(99) is not None
        server.send({"jsonrpc": "2.0", "method": "exit"})
        assert server.proc.wait(timeout=TIMEOUT) == 0
    finally:
        server.close()

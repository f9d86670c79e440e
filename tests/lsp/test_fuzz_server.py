"""Fuzzing the language server through its protocol (issue #20).

The real server (``python -m onnxlint lsp`` over stdio, driven by pytest-lsp) is
fed a deterministic stream of hostile documents built with the protobuf-level
harness of ``tests/fuzz/corpus.py``:

- binary models on disk (field and byte mutants of the seeds, random bytes),
  announced with ``workspace/didChangeWatchedFiles``;
- ONNX text opened in the editor (``didOpen``: mutated text seeds, decoded so that
  invalid UTF-8 arrives as lone surrogates, as a hostile client can send them) and
  ONNX text on disk (raw bytes, invalid UTF-8 included);
- edits of one open document (``didChange``): mutated text, 3,000-deep nesting, a
  3 MB single line, nothing;
- a model replaced by a FIFO or a ``/dev/zero`` symlink after it was linted.

Invariants: every document gets a diagnostics publish (for an edit: one for its
version) within ``ONNXLINT_FUZZ_PER_INPUT_S``; no rule crash (OL099) or allocation
failure in any diagnostic; no traceback in the server's log and no error shown to
the user; afterwards the server is alive, answers a request, and its peak RSS
stayed under ``ONNXLINT_FUZZ_MAX_RSS_MB``. The input in flight is kept under
``test-artifacts/fuzz/`` (``lsp-in-flight.*``) so a hang or a crash of the server
leaves it behind, and a failing input is saved there by hash.

The budget is ``ONNXLINT_FUZZ_EXAMPLES`` inputs in all (default 25, at least one of
each kind), as in ``tests/fuzz/test_fuzz_models.py``; figures of the run go to
``test-artifacts/fuzz/lsp-stats.json``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from onnxlint.lsp.workspace import graph_uri, path_to_uri
from tests.fuzz import corpus
from tests.lsp.models import GOOD, write_model
from tests.lsp.session import start_session
from tests.lsp.test_hostile import deeply_nested_text, long_line_text

pytestmark = [pytest.mark.fuzz, pytest.mark.asyncio(loop_scope="function")]

EXAMPLES = int(os.environ.get("ONNXLINT_FUZZ_EXAMPLES", "25"))
PER_INPUT_S = float(os.environ.get("ONNXLINT_FUZZ_PER_INPUT_S", "60"))
MAX_RSS_MB = float(os.environ.get("ONNXLINT_FUZZ_MAX_RSS_MB", "3000"))
ARTIFACTS = corpus.REPO / "test-artifacts" / "fuzz"
#: the server's stderr (its log: a traceback there is an exception that escaped a handler)
SERVER_LOG = ARTIFACTS / "lsp-server.log"

KINDS = ("file", "text-open", "text-file", "text-change", "swap")
#: inputs of each kind
PER_KIND = max(1, EXAMPLES // len(KINDS))
#: EPs the server lints for (capability, assignment, partition and EP rules need one)
EPS = [e for e in os.environ.get("ONNXLINT_FUZZ_LSP_EPS", "cpu,qnn").split(",") if e]
_BLOWUP = ("bad_alloc", "MemoryError", "out of memory")


@dataclass(frozen=True)
class Input:
    kind: str
    data: bytes
    #: for ``swap``: what replaces the model ("fifo" or "dev-zero")
    swap: str = ""


def inputs(count: int, seed: int = 0) -> Iterator[Input]:
    """``count`` inputs of each kind, interleaved; the hostile classics come first."""
    rng = random.Random(seed)
    pool = corpus.seeds()
    text_seeds = [t.encode() for _, t in sorted(corpus._TEXT_SEEDS.items())]
    names = sorted(corpus.FIELD_MUTATIONS)
    classics = [
        deeply_nested_text().encode(),
        long_line_text().encode(),
        b"",
        text_seeds[0].replace(b"relu0", b"r\xff\xfe"),
    ]
    for i in range(count):
        _, base = rng.choice(pool)
        pick = rng.randrange(3)
        if pick == 0:
            muts = [rng.choice(names) for _ in range(rng.randrange(1, 4))]
            binary = corpus.mutate_fields(base, muts, rng, rng.random() < 0.1)
        elif pick == 1:
            binary = corpus.mutate_bytes(base, rng, rng.randrange(1, 6))
        else:
            binary = rng.randbytes(rng.randrange(0, 1024))
        yield Input("file", binary)
        text = classics[i] if i < len(classics) else text_seeds[rng.randrange(len(text_seeds))]
        mutated = (
            corpus.mutate_bytes(text, rng, rng.randrange(1, 6)) if i >= len(classics) else text
        )
        yield Input("text-open", mutated)
        yield Input(
            "text-file", corpus.mutate_bytes(rng.choice(text_seeds), rng, rng.randrange(1, 6))
        )
        change = classics[(i + 1) % len(classics)] if i < len(classics) else mutated[::-1]
        if i >= len(classics) and rng.random() < 0.5:
            change = corpus.mutate_bytes(rng.choice(text_seeds), rng, rng.randrange(1, 6))
        yield Input("text-change", change)
        yield Input("swap", base, swap=("fifo", "dev-zero")[i % 2])


@dataclass
class Published:
    """Every publishDiagnostics the server sent, by URI: (version, codes, messages)."""

    by_uri: dict[str, list[tuple[int | None, list[str], list[str]]]]

    def count(self, uri: str) -> int:
        return len(self.by_uri.get(uri, []))


def _recording_client() -> LanguageClient:
    """pytest-lsp's test client, but keeping every publish (its own keeps the last one)."""
    client = LanguageClient(converter_factory=default_converter)
    published = Published(defaultdict(list))

    def record(client: LanguageClient, params: lsp.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        published.by_uri[params.uri].append(
            (
                params.version,
                [str(d.code) for d in params.diagnostics],
                [d.message for d in params.diagnostics],
            )
        )

    features = {**DEFAULT_CLIENT_FEATURES, lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: record}
    register_lsp_features(client, features)
    client.published = published  # type: ignore[attr-defined]
    return client


def _server_config() -> ClientServerConfig:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = shlex.quote(str(SERVER_LOG))
    return ClientServerConfig(
        server_command=["sh", "-c", f"exec {shlex.quote(sys.executable)} -m onnxlint lsp 2>>{log}"],
        server_env={**os.environ, "ONNXLINT_LSP_LOG": "warning"},
        client_factory=_recording_client,
    )


@pytest_lsp.fixture(config=_server_config())
async def client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path / "cache"))
    SERVER_LOG.write_text("")
    ws = tmp_path / "ws"
    ws.mkdir()
    write_model(ws / "good.onnx", GOOD)
    settings: dict[str, Any] = {"debounceMs": 0, "eps": EPS}
    lsp_client.set_configuration(settings, section="onnxlint")
    lsp_client.ws = ws  # type: ignore[attr-defined]
    await start_session(lsp_client, ws, settings)
    yield
    await lsp_client.shutdown_session()


async def _wait(predicate: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + PER_INPUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"no diagnostics within {PER_INPUT_S} s: {what}")
        await asyncio.sleep(0.005)


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _keep(item: Input, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    suffix = ".onnx" if item.kind in ("file", "swap") else ".onnxtxt"
    path = ARTIFACTS / f"{name}{suffix}"
    path.write_bytes(item.data)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps({"kind": item.kind, "swap": item.swap}))
    return path


def _watched(client: LanguageClient, path: Path, kind: lsp.FileChangeType) -> None:
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=path_to_uri(path), type=kind)])
    )


class Driver:
    """Sends one input and waits for the publish that answers it."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.ws: Path = client.ws  # type: ignore[attr-defined]
        self.published: Published = client.published  # type: ignore[attr-defined]
        self.edited = path_to_uri(self.ws / "edited.onnxtxt")
        self.version = 1

    async def open_edited(self) -> None:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=self.edited, language_id="onnx", version=1, text=GOOD)
            )
        )
        await _wait(lambda: self._has_version(self.edited, 1), "the edited document")

    def _has_version(self, uri: str, version: int) -> bool:
        return any(v == version for v, _, _ in self.published.by_uri.get(uri, []))

    def _last(self, uri: str) -> tuple[int | None, list[str], list[str]]:
        return self.published.by_uri[uri][-1]

    async def send(self, i: int, item: Input) -> list[str]:
        """The diagnostic codes published for ``item`` (the ``i``-th input)."""
        client, ws = self.client, self.ws
        if item.kind in ("file", "text-file"):
            path = ws / f"f{i}{'.onnx' if item.kind == 'file' else '.onnxtxt'}"
            path.write_bytes(item.data)
            uri = path_to_uri(path)
            _watched(client, path, lsp.FileChangeType.Created)
            await _wait(lambda: self.published.count(uri), item.kind)
            codes = self._last(uri)[1]
            path.unlink()
            _watched(client, path, lsp.FileChangeType.Deleted)
            return codes
        if item.kind == "text-open":
            # as a hostile client may: invalid UTF-8 sent as lone surrogates (JSON \udcxx)
            text = item.data.decode("utf-8", errors="surrogateescape")
            uri = path_to_uri(ws / f"t{i}.onnxtxt")
            client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(
                    lsp.TextDocumentItem(uri=uri, language_id="onnx", version=1, text=text)
                )
            )
            await _wait(lambda: self._has_version(uri, 1), item.kind)
            codes = self._last(uri)[1]
            client.text_document_did_close(
                lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri))
            )
            return codes
        if item.kind == "text-change":
            self.version += 1
            version = self.version
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(
                        uri=self.edited, version=version
                    ),
                    content_changes=[
                        lsp.TextDocumentContentChangeWholeDocument(
                            text=item.data.decode("utf-8", errors="surrogateescape")
                        )
                    ],
                )
            )
            await _wait(lambda: self._has_version(self.edited, version), item.kind)
            return next(c for v, c, _ in self.published.by_uri[self.edited] if v == version)
        assert item.kind == "swap"
        path = ws / f"s{i}.onnx"
        path.write_bytes(item.data)
        uri = path_to_uri(path)
        _watched(client, path, lsp.FileChangeType.Created)
        await _wait(lambda: self.published.count(uri), "swap: the model")
        path.unlink()
        if item.swap == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        _watched(client, path, lsp.FileChangeType.Changed)
        # (a binary model's findings go out twice, the second time with graph-view ranges:
        # the model's second publish may still be on its way, so wait for the last one)
        await _wait(lambda: self._last(uri)[1] == ["OL001"], f"swap: {item.swap} as OL001")
        codes = self._last(uri)[1]
        path.unlink()
        _watched(client, path, lsp.FileChangeType.Deleted)
        return codes

    def failures(self) -> list[str]:
        """Rule crashes and allocation failures in everything published so far."""
        out = []
        for uri, sent in self.published.by_uri.items():
            for _, codes, messages in sent:
                for code, message in zip(codes, messages, strict=True):
                    if code == "OL099" or any(w in message for w in _BLOWUP):
                        out.append(f"{uri}: {code}: {message[:300]}")
        return out


async def _alive(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    symbols = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(
                text_document=lsp.TextDocumentIdentifier(uri=graph_uri(ws / "good.onnx"))
            )
        ),
        PER_INPUT_S,
    )
    assert symbols


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /proc (Linux)")
async def test_fuzzed_documents_always_get_diagnostics(client: LanguageClient) -> None:
    server = client._server
    assert server is not None
    driver = Driver(client)
    await driver.open_edited()
    stats: dict[str, Any] = {"inputs": 0, "by_kind": defaultdict(int), "codes": defaultdict(int)}
    slowest: list[tuple[float, str, str]] = []
    start = time.monotonic()
    in_flight = ARTIFACTS / "lsp-in-flight"
    for i, item in enumerate(inputs(PER_KIND, seed=PER_KIND)):
        kept = _keep(item, in_flight.name)
        t0 = time.monotonic()
        try:
            codes = await driver.send(i, item)
        except BaseException:
            _keep(item, "lsp-" + hashlib.sha256(item.data).hexdigest()[:16])
            raise
        elapsed = time.monotonic() - t0
        kept.unlink()
        (ARTIFACTS / f"{in_flight.name}.json").unlink()
        assert server.returncode is None, f"the server exited ({server.returncode}) on {item.kind}"
        stats["inputs"] += 1
        stats["by_kind"][item.kind] += 1
        for code in codes:
            stats["codes"][code] += 1
        slowest = sorted([*slowest, (round(elapsed, 3), item.kind, f"#{i}")], reverse=True)[:5]
    await _alive(client)
    stats["seconds"] = round(time.monotonic() - start, 1)
    stats["slowest"] = slowest
    stats["server_peak_rss_mb"] = round(_peak_rss_mb(server.pid), 1)
    (ARTIFACTS / "lsp-stats.json").write_text(json.dumps(stats, indent=2))
    assert stats["inputs"] == PER_KIND * len(KINDS)
    assert not driver.failures(), driver.failures()[:10]
    errors = [m.message for m in client.messages if m.type == lsp.MessageType.Error]
    assert not errors, errors[:5]
    log = SERVER_LOG.read_text(errors="replace")
    assert "Traceback" not in log, log[-5000:]
    assert stats["server_peak_rss_mb"] < MAX_RSS_MB, stats

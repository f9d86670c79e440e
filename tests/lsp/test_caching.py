"""The language server's fast paths (issue #9): what is cached, what is shared, what waits.

In-process, without a client: the lint service and the workspace functions the
server calls on a change and for the graph view. Nothing here is timed; each
test counts work (analyses run, views rendered, indexes built) or checks an
order of events. The latency figures belong to ``python -m benchmarks --only lsp``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from lsprotocol import types as lsp

import onnxlint.lsp.service as service_mod
from benchmarks import corpus
from onnxlint import cli
from onnxlint.lsp import features
from onnxlint.lsp.printer import render_graph_view
from onnxlint.lsp.service import VIEW_CACHE_SIZE, LintService
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.sourcemap import SourceMap, Token
from onnxlint.lsp.workspace import ModelState, analyse, build_view, path_to_uri
from tests.lsp.models import BAD, GOOD, NESTED, write_model

WAIT = 60.0  # seconds a blocked analysis may wait before the test gives up


def _service(published: list[ModelState] | None = None) -> LintService:
    sink = published if published is not None else []
    return LintService(sink.append, lambda _u: None, Settings(debounce_ms=0))


def _retag(path: Path, tag: str) -> None:
    """New bytes, same graph: what an exporter re-run or the benchmark's edit writes."""
    model = onnx.load(str(path))
    model.producer_version = tag
    path.write_bytes(model.SerializeToString())


class Gate:
    """Holds ``analyse`` in the worker until released (a lint that takes its time)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, after: bool = False) -> None:
        """``after``: the analysis reads the model first, then waits (else waits, then reads)."""
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        real = service_mod.analyse

        def held(*args: Any, **kw: Any) -> ModelState:
            self.calls += 1
            state = real(*args, **kw) if after else None
            self.started.set()
            if not self.release.wait(WAIT):
                raise TimeoutError("the test never released the analysis")
            return state if state is not None else real(*args, **kw)

        monkeypatch.setattr(service_mod, "analyse", held)

    async def running(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.started.wait, WAIT)
        assert self.started.is_set()


# -- the lint: cached by content, shared while in flight -----------------------------------


def test_unchanged_bytes_are_answered_from_the_cache(tmp_path: Path) -> None:
    """A save or touch without a content change: published again, never re-linted."""
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> LintService:
        svc = _service(published)
        await svc.schedule(uri, model)
        model.write_bytes(model.read_bytes())  # a touch: new mtime, same bytes
        await svc.schedule(uri, model)
        svc.shutdown()
        return svc

    svc = asyncio.run(scenario())
    assert svc.runs == 1
    assert len(published) == 2 and published[0] is published[1]


def test_new_bytes_invalidate_the_lint_and_the_view(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)

    async def scenario() -> None:
        published: list[ModelState] = []
        svc = _service(published)
        first = await svc.view(uri, model)
        again = await svc.view(uri, model)
        assert first is again and svc.view_runs == 1
        await svc.schedule(uri, model)
        write_model(model, GOOD)
        changed = await svc.view(uri, model)
        assert changed is not None and first is not None
        assert svc.view_runs == 2 and changed.content_hash != first.content_hash
        assert "FancyOp" in first.text and "FancyOp" not in changed.text
        await svc.schedule(uri, model)
        assert svc.runs == 2
        assert "OL204" not in [d.code for d in published[-1].report.diagnostics]
        svc.shutdown()

    asyncio.run(scenario())


def test_a_file_deleted_while_it_is_linted_gets_no_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read, then deleted before its lint is published, with no Deleted event (a client
    may watch other patterns): nothing is published for the file that is gone."""
    gate = Gate(monkeypatch, after=True)
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> LintService:
        svc = _service(published)
        task = svc.schedule(uri, model)
        await gate.running()  # the bytes are read and linted
        model.unlink()
        gate.release.set()
        await task
        svc.shutdown()
        return svc

    svc = asyncio.run(scenario())
    assert gate.calls == 1 and published == [] and uri not in svc.states


def test_a_lint_in_flight_is_shared_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second request for the same bytes while they are linted awaits that run."""
    gate = Gate(monkeypatch)
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> LintService:
        svc = _service(published)
        first = svc.schedule(uri, model, delay=0)
        await gate.running()
        second = svc.schedule(uri, model, delay=0)  # e.g. the view asking for diagnostics
        await asyncio.sleep(0.05)
        gate.release.set()
        await asyncio.gather(first, second, return_exceptions=True)
        svc.shutdown()
        return svc

    svc = asyncio.run(scenario())
    assert gate.calls == 1 and svc.runs == 1
    # the first task was superseded by the second: one publish, of the shared result
    assert len(published) == 1 and published[0] is svc.states[uri]


def test_a_superseded_run_still_fills_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Content A, then B while A is linted, then A again: A's finished run is reused."""
    gate = Gate(monkeypatch, after=True)
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    a = model.read_bytes()

    async def scenario() -> LintService:
        svc = _service()
        first = svc.schedule(uri, model, delay=0)
        await gate.running()
        write_model(model, GOOD)
        second = svc.schedule(uri, model, delay=0)
        gate.release.set()
        await asyncio.gather(first, second, return_exceptions=True)
        model.write_bytes(a)
        await svc.schedule(uri, model, delay=0)
        svc.shutdown()
        return svc

    svc = asyncio.run(scenario())
    assert svc.runs == 2  # A and B, never A twice
    assert "OL204" in [d.code for d in svc.states[uri].report.diagnostics]


def test_a_file_rewritten_during_its_lint_is_never_cached_as_the_old_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lint reads the file itself: if it changed since the service read it, the
    result describes the new bytes and is not kept under the old bytes' hash."""
    gate = Gate(monkeypatch)  # waits before the lint reads the file
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    a = model.read_bytes()

    async def scenario() -> tuple[LintService, ModelState]:
        svc = _service()
        first = svc.schedule(uri, model, delay=0)
        await gate.running()
        write_model(model, GOOD)  # lands before the held lint reads the file
        b = model.read_bytes()
        gate.release.set()
        await asyncio.gather(first, return_exceptions=True)
        linted = svc.states[uri]
        assert linted.content_hash == service_mod.content_hash(b)
        model.write_bytes(a)
        await svc.schedule(uri, model, delay=0)
        svc.shutdown()
        return svc, linted

    svc, linted = asyncio.run(scenario())
    assert "OL204" not in [d.code for d in linted.report.diagnostics]
    # A is linted again (its first run saw B), and gets A's findings
    assert svc.runs == 2
    assert "OL204" in [d.code for d in svc.states[uri].report.diagnostics]


# -- the graph view: by content hash, never behind a lint ------------------------------------


def test_the_view_is_answered_while_the_lint_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(monkeypatch)
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> None:
        svc = _service(published)
        lint = svc.schedule(uri, model, delay=0)
        await gate.running()
        view = await asyncio.wait_for(svc.view(uri, model), WAIT)
        # the text is out, the lint still held: its diagnostics follow
        assert view is not None and "mystery0" in view.text
        assert not lint.done() and published == []
        assert any(n["path"] == "main/mystery0" for n in view.nodes)
        gate.release.set()
        await lint
        assert len(published) == 1
        # the lint of the same bytes takes the view's map instead of rendering again
        await svc.ensure_view(published[0])
        assert published[0].source is view.source and svc.view_runs == 1
        svc.shutdown()

    asyncio.run(scenario())


def test_a_change_is_published_without_rendering_the_view(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", NESTED)
    uri = path_to_uri(model)

    async def scenario() -> None:
        published: list[ModelState] = []
        svc = _service(published)
        await svc.schedule(uri, model)
        (state,) = published
        assert state.view_pending and svc.view_runs == 0
        await svc.ensure_view(state)
        assert not state.view_pending and state.source is not None and svc.view_runs == 1
        await svc.ensure_view(state)
        view = await svc.view(uri, model)  # the lint's view serves the request
        assert view is not None and view.source is state.source and svc.view_runs == 1
        svc.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("node_budget", "kept"), [(10_000, VIEW_CACHE_SIZE), (5, 2), (1, 1)], ids=str
)
def test_the_view_cache_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, node_budget: int, kept: int
) -> None:
    """By count and by nodes (BAD has 2), least recently used out first, newest always kept."""
    monkeypatch.setattr(service_mod, "VIEW_CACHE_NODES", node_budget)
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)

    async def scenario() -> None:
        svc = _service()
        hashes = []
        for i in range(VIEW_CACHE_SIZE + 2):
            _retag(model, f"v{i}")
            view = await svc.view(uri, model)
            assert view is not None
            hashes.append(view.content_hash)
        assert list(svc.views) == hashes[-kept:]
        svc.shutdown()

    asyncio.run(scenario())


VIEW_FAILURES = [
    ("corrupt", b"\x08\x07not a protobuf model\xff\xff", "# OL002"),
    ("empty", b"", "# OL003"),
]


@pytest.mark.parametrize(("name", "data", "says"), VIEW_FAILURES, ids=[c[0] for c in VIEW_FAILURES])
def test_a_view_of_an_unloadable_model_says_why(
    tmp_path: Path, name: str, data: bytes, says: str
) -> None:
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(data)
    view = build_view(path, data, Settings())
    assert view.text.startswith(f"# onnxlint: {name}.onnx could not be rendered as a graph")
    assert says in view.text and view.nodes == [] and view.source is None


def test_a_view_of_a_missing_file_is_none(tmp_path: Path) -> None:
    async def scenario() -> None:
        svc = _service()
        path = tmp_path / "gone.onnx"
        assert await svc.view(path_to_uri(path), path) is None
        svc.shutdown()

    asyncio.run(scenario())


# -- analyse: the lint's own work is reused ------------------------------------------------


def _count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    count = [0]
    real: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kw: Any) -> Any:
        count[0] += 1
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, counted)
    return count


def test_analyse_indexes_and_infers_no_more_than_the_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint import engine
    from onnxlint.index import ModelIndex

    model = write_model(tmp_path / "m.onnx", NESTED)
    indexes = _count_calls(monkeypatch, ModelIndex, "__init__")
    inferences = _count_calls(monkeypatch, onnx.shape_inference, "infer_shapes")
    engine.lint(model)
    lint_only = (indexes[0], inferences[0])
    indexes[0] = inferences[0] = 0
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    assert state.index is not None and state.view_pending
    assert (indexes[0], inferences[0]) == lint_only
    assert state.source is not None  # rendered on first use, from the same index
    assert indexes[0] == lint_only[0]


TYPE_CASES = [
    # declared graph input, inferred intermediate (no value_info in the file), subgraph output
    (BAD, "main", "x", "float[N,4]"),
    (BAD, "main", "r", "float[N,4]"),
    (NESTED, "main/if0:then_branch", "t", "float[4]"),
    (NESTED, "main", "n", "float[4]"),
]


@pytest.mark.parametrize(("text", "graph", "name", "expected"), TYPE_CASES)
def test_value_types_come_from_the_lints_shape_analysis(
    tmp_path: Path, text: str, graph: str, name: str, expected: str
) -> None:
    model = write_model(tmp_path / "m.onnx", text)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    assert state.value_types.get((graph, name)) == expected
    assert (graph, name) in dict(state.value_types.items())


# -- the text map's lookups ------------------------------------------------------------------


def _brute_token_at(smap: SourceMap, line: int, col: int) -> Token | None:
    return next((t for t in smap.tokens if t.line == line and t.start <= col <= t.end), None)


def _brute_definition(smap: SourceMap, name: str, graph: str) -> Token | None:
    g: str | None = graph
    while g is not None:
        for t in smap.tokens:
            if (
                t.graph == g
                and t.name == name
                and t.role in ("output", "graph-input", "initializer")
            ):
                return t
        g = smap.outer.get(g)
    return None


MAPS: list[tuple[str, Callable[[], onnx.ModelProto]]] = [
    ("bad", lambda: onnx.parser.parse_model(BAD)),
    ("nested", lambda: onnx.parser.parse_model(NESTED)),
    ("synthetic", lambda: corpus.synthetic(300, seed=5)),
]


@pytest.mark.parametrize("build", [m[1] for m in MAPS], ids=[m[0] for m in MAPS])
def test_indexed_lookups_agree_with_a_scan(build: Callable[[], onnx.ModelProto]) -> None:
    from onnxlint.index import ModelIndex

    index = ModelIndex(build())
    smap = render_graph_view(index)
    assert smap.lines == smap.text.split("\n")
    for tok in smap.tokens:
        for col in (tok.start, tok.end):
            assert smap.token_at(tok.line, col) == _brute_token_at(smap, tok.line, col)
        assert smap.definition_of(tok.name, tok.graph) == _brute_definition(
            smap, tok.name, tok.graph
        )
        if tok.node is not None:
            first = next(t for t in smap.tokens if t.node == tok.node and t.name == tok.name)
            assert smap.token_in_node(tok.node, tok.name) == first
    assert smap.token_at(len(smap.lines) + 5, 0) is None


# -- what the server publishes equals what the CLI reports -----------------------------------


def _cli_findings(model: Path, config: Path, out: Path) -> list[dict[str, Any]]:
    code = cli.main(
        [str(model), "--config", str(config), "--format", "json", "-o", str(out), "--no-progress"]
    )
    assert code in (0, 1)
    (report,) = json.loads(out.read_text())["files"]
    return list(report["diagnostics"])


def _key(code: Any, loc: dict[str, Any], ep: Any) -> tuple[Any, ...]:
    return (code, loc.get("graph"), loc.get("node_path"), loc.get("tensor"), ep)


def test_published_diagnostics_equal_the_cli_findings(tmp_path: Path) -> None:
    """Every view of the server (file, graph view) carries the CLI's findings, no more."""
    config = tmp_path / "onnxlint.toml"
    config.write_text('eps = ["qnn"]\n')
    model = tmp_path / "synth.onnx"
    onnx.save(corpus.synthetic(300, seed=7), str(model))
    expected = _cli_findings(model, config, tmp_path / "report.json")
    assert len(expected) > 5  # a model with findings of several families

    async def scenario() -> tuple[list[lsp.Diagnostic], list[lsp.Diagnostic]]:
        published: list[ModelState] = []
        svc = _service(published)
        await svc.schedule(path_to_uri(model), model)
        (state,) = published
        file_view = features.diagnostics_for(state, view="file")
        await svc.ensure_view(state)
        graph_view = features.diagnostics_for(state, view="graph")
        svc.shutdown()
        return file_view, graph_view

    file_view, graph_view = asyncio.run(scenario())
    want = sorted(_key(d["code"], d["location"], d["ep"]) for d in expected)
    causes = json.loads((tmp_path / "report.json").read_text())["files"][0]["causes"]
    for diags in (file_view, graph_view):
        got = sorted(
            _key(d.code, {k: d.data.get(k) for k in ("graph", "node_path", "tensor")}, d.data["ep"])
            for d in diags
            if "root_cause" not in d.data
        )
        assert got == want
        # and one more diagnostic per root cause the CLI reports, at the cause
        roots = [d.data["root_cause"] for d in diags if "root_cause" in d.data]
        assert sorted((r["kind"], r["nodes"]) for r in roots) == sorted(
            (c["cause"]["kind"], c["nodes"]) for c in causes
        )
    messages = {d["message"] for d in expected}
    findings = [d for d in file_view if "root_cause" not in d.data]
    assert all(any(m in d.message for m in messages) for d in findings)


# -- the server process ------------------------------------------------------------------------


def test_the_server_collects_garbage_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxlint.lsp import server

    monkeypatch.setattr(server.server, "start_io", lambda: None)
    before = gc.get_threshold()
    try:
        assert server.main() == 0
        assert gc.get_threshold() == server.GC_THRESHOLDS
        assert server.GC_THRESHOLDS[0] > before[0]
        # and its full collections wait until it is idle (tests/lsp/test_idle_collect.py)
        assert server.server.service.collector is not None
    finally:
        gc.set_threshold(*before)
        if server.server.service.collector is not None:
            server.server.service.collector.close()
        server.server.service.collector = None


@pytest.mark.parametrize("current", [True, False], ids=["current", "superseded"])
def test_graph_view_diagnostics_only_for_the_current_result(tmp_path: Path, current: bool) -> None:
    """An open view gets the diagnostics of the result still current; a superseded result
    (a burst of changes) is neither rendered nor published."""
    from onnxlint.lsp.host import OnnxLintServer
    from onnxlint.lsp.workspace import graph_uri

    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    state = analyse(uri, model, model.read_bytes(), Settings())
    newer = analyse(uri, model, model.read_bytes(), Settings())
    sent: list[tuple[str, list[lsp.Diagnostic]]] = []

    async def scenario() -> OnnxLintServer:
        ls = OnnxLintServer()
        ls._send = lambda u, d, v=None: sent.append((u, d))  # type: ignore[method-assign]
        ls.graph_views.add(graph_uri(model))
        ls.service.states[uri] = state if current else newer
        ls.publish_graph(state)
        await asyncio.gather(*ls._background)
        ls.service.shutdown()
        return ls

    ls = asyncio.run(scenario())
    if current:
        ((where, diags),) = sent
        assert where == graph_uri(model) and "OL204" in [d.code for d in diags]
        assert not state.view_pending and ls.service.view_runs == 1
    else:
        assert sent == [] and state.view_pending and ls.service.view_runs == 0


def test_the_lint_cache_is_bounded_by_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large models: cached results are counted in nodes, least recently used out first."""
    monkeypatch.setattr(service_mod, "CACHE_NODES", 5)  # BAD has 2 nodes: two results fit
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)

    async def scenario() -> LintService:
        svc = _service()
        for tag in ("a", "b", "a", "c"):  # "a" used again: "b" is the oldest when "c" comes
            _retag(model, tag)
            await svc.schedule(uri, model)
        assert svc.runs == 3
        for tag, runs in (("a", 3), ("c", 3), ("b", 4)):
            _retag(model, tag)
            await svc.schedule(uri, model)
            assert svc.runs == runs, tag
        svc.shutdown()
        return svc

    asyncio.run(scenario())


# -- diagnostics on the wire -------------------------------------------------------------------

_R = lsp.Range(lsp.Position(3, 4), lsp.Position(3, 9))
WIRE_CASES = [
    lsp.Diagnostic(range=_R, message="bare"),
    lsp.Diagnostic(
        range=_R,
        message="everything",
        severity=lsp.DiagnosticSeverity.Hint,
        code="OL501",
        code_description=lsp.CodeDescription(href="file:///docs/OL501.md"),
        source="onnxlint",
        tags=[lsp.DiagnosticTag.Unnecessary],
        related_information=[
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(uri="onnx-graph:/m.onnx.onnxtxt", range=_R), message="here"
            )
        ],
        data={"code": "OL501", "fix": {"action": "fix-shapes", "args": {"dims": {"N": 1}}}},
    ),
    lsp.Diagnostic(range=_R, message="numeric code", code=7, data={"node_path": None}),
]


def test_diagnostics_on_the_wire_equal_pyglss_own_serialization(tmp_path: Path) -> None:
    """The server's fast JSON for diagnostics is byte for byte what pygls would send."""
    from pygls.protocol import default_converter

    from onnxlint.lsp.host import make_converter

    model = write_model(tmp_path / "m.onnx", NESTED)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    real = [d for view in ("file", "graph") for d in features.diagnostics_for(state, view=view)]
    assert real
    ours, theirs = make_converter(), default_converter()
    assert ours.get_unstructure_hook(lsp.Diagnostic) is features.diagnostic_json
    for diag in [*WIRE_CASES, *real]:
        note = lsp.PublishDiagnosticsNotification(
            params=lsp.PublishDiagnosticsParams(uri="file:///m.onnx", diagnostics=[diag])
        )
        assert json.dumps(ours.unstructure(note)) == json.dumps(theirs.unstructure(note))

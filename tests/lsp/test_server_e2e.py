"""The language server end to end: real JSON-RPC over stdio with pytest-lsp.

Each test starts ``python -m onnxlint lsp`` on a fresh temporary workspace
holding a clean model, a model with an unknown operator (OL204 on a named
node), a model with a nested If, and a corrupt file.
"""

from __future__ import annotations

import ast
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from onnxlint.lsp.workspace import graph_uri, path_to_uri
from tests.lsp.models import BAD, GOOD, NESTED, write_model
from tests.lsp.session import server_config, start_session

pytestmark = pytest.mark.asyncio(loop_scope="function")

TIMEOUT = 60.0


#: the families whose rules these tests exercise; other families evolve on their own
CONFIG = 'select = ["OL0", "OL1", "OL2"]\n'


def _make_workspace(root: Path) -> None:
    (root / "onnxlint.toml").write_text(CONFIG)
    write_model(root / "good.onnx", GOOD)
    write_model(root / "bad.onnx", BAD)
    sub = root / "models"
    sub.mkdir()
    write_model(sub / "nested.onnx", NESTED)
    (root / "corrupt.onnx").write_bytes(b"\x08\x07this is not a protobuf model at all\xff\xff")
    hidden = root / ".git"
    hidden.mkdir()
    write_model(hidden / "ignored.onnx", BAD)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ws = tmp_path / "ws"
    ws.mkdir()
    _make_workspace(ws)
    lsp_client.ws = ws  # type: ignore[attr-defined]
    seen = await start_session(lsp_client, ws, getattr(request, "param", None))
    lsp_client.seen = seen  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def wait_until(predicate: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
    """Poll until ``predicate()`` is truthy (diagnostics arrive as notifications)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the server")
        await asyncio.sleep(0.05)


def codes(client: LanguageClient, uri: str) -> list[str]:
    return sorted(str(d.code) for d in client.diagnostics.get(uri, []))


async def scanned(client: LanguageClient) -> Path:
    ws: Path = client.ws  # type: ignore[attr-defined]
    for name in ("good.onnx", "bad.onnx", "corrupt.onnx", "models/nested.onnx"):
        await wait_until(lambda n=name: path_to_uri(ws / n) in client.diagnostics)
    return ws


async def test_workspace_scan_publishes_for_binary_models(client: LanguageClient) -> None:
    ws = await scanned(client)
    assert codes(client, path_to_uri(ws / "good.onnx")) == []
    assert "OL204" in codes(client, path_to_uri(ws / "bad.onnx"))
    assert "OL204" in codes(client, path_to_uri(ws / "models" / "nested.onnx"))
    # hidden folders are not scanned
    assert path_to_uri(ws / ".git" / "ignored.onnx") not in client.diagnostics
    # the status bar's notification: after the scan, every model counted
    status = await wait_until(lambda: [x for x in client.seen.statuses if x.models >= 4])  # type: ignore[attr-defined]
    assert status[-1].version
    bad = next(d for d in client.diagnostics[path_to_uri(ws / "bad.onnx")] if d.code == "OL204")
    assert bad.source == "onnxlint"
    assert bad.severity == lsp.DiagnosticSeverity.Error
    assert "main/mystery0" in bad.message  # a binary file has no lines: the node is named
    assert bad.data["node_path"] == "main/mystery0"
    assert bad.code_description is not None
    assert bad.code_description.href.endswith("OL204.md")
    assert (
        Path(bad.code_description.href.removeprefix("file://")).read_text().startswith("## OL204")
    )
    # work-done progress: begin, reports, end
    kinds = [type(v).__name__ for reports in client.progress_reports.values() for v in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    # the file watcher is registered for models and external data
    regs = client.seen.registrations  # type: ignore[attr-defined]
    globs = [w["globPattern"] for r in regs for w in r.register_options["watchers"]]
    assert "**/*.onnx" in globs


async def test_corrupt_model_gets_a_load_diagnostic_and_the_server_stays_up(
    client: LanguageClient,
) -> None:
    ws = await scanned(client)
    diags = client.diagnostics[path_to_uri(ws / "corrupt.onnx")]
    assert [d.code for d in diags] == ["OL002"]
    assert diags[0].data["category"] == "load"
    # still answering requests
    assert "Relu" in (await graph_view(client, ws / "good.onnx"))["text"]


async def test_changed_file_is_relinted(client: LanguageClient) -> None:
    ws = await scanned(client)
    uri = path_to_uri(ws / "good.onnx")
    assert codes(client, uri) == []
    write_model(ws / "good.onnx", BAD)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri, type=lsp.FileChangeType.Changed)]
        )
    )
    await wait_until(lambda: "OL204" in codes(client, uri))
    (ws / "good.onnx").unlink()
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri, type=lsp.FileChangeType.Deleted)]
        )
    )
    await wait_until(lambda: codes(client, uri) == [])


async def graph_view(client: LanguageClient, path: Path) -> dict[str, Any]:
    result = await client.protocol.send_request_async(
        "onnxlint/graphView", {"uri": path_to_uri(path)}
    )
    # pygls hands custom results back as namedtuples
    return {
        "uri": result.uri,
        "text": result.text,
        "nodes": {n.path: n.line for n in result.nodes},
    }


async def test_graph_view_text_node_lines_and_squiggles(client: LanguageClient) -> None:
    ws = await scanned(client)
    view = await graph_view(client, ws / "bad.onnx")
    lines = view["text"].split("\n")
    assert view["uri"] == graph_uri(ws / "bad.onnx")
    line = view["nodes"]["main/mystery0"]
    assert "[mystery0] y = FancyOp (r)" in lines[line]
    assert "Relu" in lines[view["nodes"]["main/relu0"]]
    # diagnostics published on the virtual document, on the node's line
    await wait_until(lambda: "OL204" in codes(client, view["uri"]))
    d = next(d for d in client.diagnostics[view["uri"]] if d.code == "OL204")
    assert d.range.start.line == line
    # nested graphs are printed inline, their nodes mapped too
    nested = await graph_view(client, ws / "models" / "nested.onnx")
    nlines = nested["text"].split("\n")
    assert "FancyOp" in nlines[nested["nodes"]["main/if0:else_branch/else_fancy"]]


async def test_one_set_of_problems_per_model_that_navigates_to_the_node(
    client: LanguageClient,
) -> None:
    """On the file while no view is open, each with its node's range in the view and a
    related location there; on the view alone while it is open; back when it closes."""
    ws = await scanned(client)
    model = ws / "bad.onnx"
    uri, guri = path_to_uri(model), graph_uri(model)

    def located() -> Any:
        d = next((d for d in client.diagnostics.get(uri, []) if d.code == "OL204"), None)
        return d if d is not None and d.related_information else None

    d = await wait_until(located)
    assert d.related_information[0].location.uri == guri
    assert d.related_information[0].message == "main/mystery0 (FancyOp) in the graph view"
    view = await graph_view(client, model)
    line = view["nodes"]["main/mystery0"]
    assert d.range.start.line == line == d.related_information[0].location.range.start.line
    # the view is open: its problems there, none on the file
    await wait_until(lambda: "OL204" in codes(client, guri) and codes(client, uri) == [])
    client.protocol.notify("onnxlint/graphViewClosed", {"uri": guri})
    await wait_until(lambda: codes(client, guri) == [] and "OL204" in codes(client, uri))
    # a view reopened, then closed the LSP way (didClose) does the same
    await graph_view(client, model)
    await wait_until(lambda: "OL204" in codes(client, guri) and codes(client, uri) == [])
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(guri)))
    await wait_until(lambda: codes(client, guri) == [] and "OL204" in codes(client, uri))


async def test_hover_symbols_definition_on_graph_view(client: LanguageClient) -> None:
    ws = await scanned(client)
    view = await graph_view(client, ws / "bad.onnx")
    uri = view["uri"]
    line = view["nodes"]["main/mystery0"]
    text_line = view["text"].split("\n")[line]
    col = text_line.index("FancyOp") + 2
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, col))
    )
    assert hover is not None
    assert "FancyOp" in hover.contents.value and "OL204" in hover.contents.value
    # hover on a value shows its type
    col_x = view["text"].split("\n")[view["nodes"]["main/relu0"]].index("(x)") + 1
    vh = await client.text_document_hover_async(
        lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(view["nodes"]["main/relu0"], col_x)
        )
    )
    assert vh is not None and "float[N,4]" in vh.contents.value
    # go to definition: the input 'r' of mystery0 -> the output of relu0
    col_r = text_line.index("(r)") + 1
    loc = await client.text_document_definition_async(
        lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, col_r))
    )
    assert loc is not None and loc.range.start.line == view["nodes"]["main/relu0"]
    # outline: the graph with its nodes; nested subgraphs under their If node
    nested = await graph_view(client, ws / "models" / "nested.onnx")
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(nested["uri"]))
    )
    main = symbols[0]
    assert [c.name for c in main.children] == ["neg0", "if0"]
    if0 = main.children[1]
    assert {s.name.split(" ")[0] for s in if0.children} == {"then_g", "else_g"}
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    assert lenses and lenses[0].command.title.startswith("onnxlint: ")


async def test_code_action_suppresses_for_the_node(client: LanguageClient) -> None:
    ws = await scanned(client)
    uri = path_to_uri(ws / "bad.onnx")
    diag = next(d for d in client.diagnostics[uri] if d.code == "OL204")
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=diag.range,
            context=lsp.CodeActionContext(diagnostics=[diag]),
        )
    )
    titles = [a.title for a in actions]
    assert "Ignore OL204 for node main/mystery0 (onnxlint.toml)" in titles
    action = actions[titles.index("Ignore OL204 for node main/mystery0 (onnxlint.toml)")]
    # the edit rewrites onnxlint.toml in the editor; apply it as the editor would, then save
    config_uri = path_to_uri(ws / "onnxlint.toml")
    (edit,) = action.edit.changes[config_uri]
    assert edit.new_text.startswith(CONFIG)
    (ws / "onnxlint.toml").write_text(edit.new_text)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=config_uri, type=lsp.FileChangeType.Changed)]
        )
    )
    await wait_until(lambda: "OL204" not in codes(client, uri))
    # the model itself was never touched
    assert "FancyOp" in (await graph_view(client, ws / "bad.onnx"))["text"]


async def test_onnxtxt_documents_get_exact_ranges_and_parse_errors(
    client: LanguageClient,
) -> None:
    ws = await scanned(client)
    path = ws / "edited.onnxtxt"
    uri = path_to_uri(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "onnx", 1, BAD))
    )
    await wait_until(lambda: "OL204" in codes(client, uri))
    d = next(d for d in client.diagnostics[uri] if d.code == "OL204")
    assert BAD.split("\n")[d.range.start.line].strip().startswith("[mystery0]")
    # a syntax error: OL006 at the parser's position
    broken = BAD.replace("FancyOp (r)", "FancyOp (r")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [lsp.TextDocumentContentChangeWholeDocument(text=broken)],
        )
    )
    await wait_until(lambda: codes(client, uri) == ["OL006"])
    err = client.diagnostics[uri][0]
    assert err.range.start.line == 4  # the '}' where ')' was expected (line 5, 1-based)
    # fixed: the error goes, the unknown operator is back
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=3, uri=uri),
            [lsp.TextDocumentContentChangeWholeDocument(text=GOOD)],
        )
    )
    await wait_until(lambda: codes(client, uri) == [])
    # features work on text documents too
    hover = await client.text_document_hover_async(
        lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(2, GOOD.split("\n")[2].index("Relu"))
        )
    )
    assert hover is not None and "Relu" in hover.contents.value


async def test_edits_arrive_as_ranges_not_whole_documents(client: LanguageClient) -> None:
    """The server asks for incremental sync: a keystroke in a 7 MB printed model sends
    the edit, not the document; the lint sees the edited text."""
    ws = await scanned(client)
    result = client.seen.initialized  # type: ignore[attr-defined]
    sync = result.capabilities.text_document_sync
    assert isinstance(sync, lsp.TextDocumentSyncOptions)
    assert sync.change == lsp.TextDocumentSyncKind.Incremental
    uri = path_to_uri(ws / "ranged.onnxtxt")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "onnx", 1, BAD))
    )
    await wait_until(lambda: "OL204" in codes(client, uri))
    line = BAD.split("\n").index("   [mystery0] y = FancyOp (r)")
    start = BAD.split("\n")[line].index("FancyOp")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(
                        lsp.Position(line, start), lsp.Position(line, start + len("FancyOp"))
                    ),
                    text="Relu",
                )
            ],
        )
    )
    await wait_until(lambda: "OL204" not in codes(client, uri))
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    assert [x.name for x in symbols[0].children or []] == ["relu0", "mystery0"]


async def test_features_answer_for_the_version_they_are_asked_about(
    client: LanguageClient,
) -> None:
    """Edit, break, undo: lenses and symbols asked for at once describe that version
    (the request waits for its lint), and each lint asks the client to refresh them."""
    ws = await scanned(client)
    uri = path_to_uri(ws / "edited.onnxtxt")
    ident = lsp.TextDocumentIdentifier(uri)

    async def lenses_and_symbols() -> tuple[list[str], list[str]]:
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(ident))
        symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))
        main = symbols[0].children if symbols else []
        return [x.command.title for x in lenses or []], [x.name for x in main or []]

    def change(version: int, text: str) -> None:
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "onnx", 1, GOOD))
    )
    lenses, names = await lenses_and_symbols()
    assert names == ["relu0"] and "no findings" in lenses[0]
    change(2, BAD)  # asked at once: not the answer of version 1
    lenses, names = await lenses_and_symbols()
    assert names == ["relu0", "mystery0"] and "error" in lenses[0]
    change(3, BAD.replace("FancyOp (r)", "FancyOp (r"))  # does not parse: nothing to show
    assert await lenses_and_symbols() == ([], [])
    change(4, BAD)  # undo
    lenses, names = await lenses_and_symbols()
    assert names == ["relu0", "mystery0"] and "error" in lenses[0]
    refreshes: list[str] = client.seen.refreshes  # type: ignore[attr-defined]
    await wait_until(lambda: {"codeLens", "inlayHint"} <= set(refreshes))
    # a quick fix anywhere on the node's line, not only on the token it underlines
    line = BAD.split("\n").index("   [mystery0] y = FancyOp (r)")
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=ident,
            range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
            context=lsp.CodeActionContext(diagnostics=[]),
        )
    )
    assert "Ignore OL204 for node main/mystery0 (onnxlint.toml)" in [a.title for a in actions]


async def test_pull_diagnostics_result_id(client: LanguageClient) -> None:
    ws = await scanned(client)
    uri = path_to_uri(ws / "bad.onnx")
    first = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(uri))
    )
    assert first.kind == "full" and "OL204" in [d.code for d in first.items]
    again = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            lsp.TextDocumentIdentifier(uri), previous_result_id=first.result_id
        )
    )
    assert again.kind == "unchanged" and again.result_id == first.result_id
    # the configuration file changed (no watcher event: the pull alone must notice)
    (ws / "onnxlint.toml").write_text(CONFIG + 'ignore = ["OL204"]\n')
    reconfigured = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            lsp.TextDocumentIdentifier(uri), previous_result_id=first.result_id
        )
    )
    assert reconfigured.kind == "full" and reconfigured.result_id != first.result_id
    assert "OL204" not in [d.code for d in reconfigured.items]
    (ws / "onnxlint.toml").write_text(CONFIG)
    write_model(ws / "bad.onnx", GOOD)
    changed = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            lsp.TextDocumentIdentifier(uri), previous_result_id=first.result_id
        )
    )
    assert (
        changed.kind == "full"
        and changed.result_id != first.result_id
        and list(changed.items) == []
    )


async def test_settings_change_relints(client: LanguageClient) -> None:
    ws = await scanned(client)
    uri = path_to_uri(ws / "bad.onnx")
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"onnxlint": {"select": ["OL3"]}})
    )
    await wait_until(lambda: codes(client, uri) == ["OL301"])
    # the re-check reports its progress, to the end

    def ended(message: str) -> bool:
        return any(
            isinstance(v, lsp.WorkDoneProgressEnd) and v.message == message
            for reports in client.progress_reports.values()
            for v in reports
        )

    await wait_until(lambda: ended("4 model(s) checked") and len(client.progress_reports) >= 2)
    # an invalid setting is reported, and the default is used
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"onnxlint": {"select": 7, "confirm": "yes"}})
    )
    # (the workspace's onnxlint.toml selects OL0-OL2)
    await wait_until(lambda: codes(client, uri) == ["OL204"])
    await wait_until(lambda: any("onnxlint.select" in m.message for m in client.messages))
    assert any("onnxlint.confirm" in m.message for m in client.messages)


@pytest.mark.parametrize("client", [{"eps": ["no-such-ep"], "bogus": 1}], indirect=True)
async def test_invalid_initialization_options_fall_back_to_defaults(client: LanguageClient) -> None:
    ws = await scanned(client)
    assert "OL204" in codes(client, path_to_uri(ws / "bad.onnx"))
    messages = " ".join(m.message for m in client.messages)
    assert "no-such-ep" in messages and "onnxlint.bogus" in messages


async def test_shutdown_and_exit(client: LanguageClient) -> None:
    await scanned(client)
    await client.shutdown_async(None)
    client.exit(None)
    server = client._server  # the server process pytest-lsp started
    assert server is not None
    assert await asyncio.wait_for(server.wait(), timeout=TIMEOUT) == 0
    client.capabilities = None  # already shut down: the fixture must not do it again


@pytest.mark.parametrize("client", [{"select": ["OL301"]}], indirect=True)
async def test_fix_dynamic_dims_writes_a_new_model(client: LanguageClient) -> None:
    ws = await scanned(client)
    model = ws / "good.onnx"
    before = model.read_bytes()
    uri = path_to_uri(model)
    await wait_until(lambda: "OL301" in codes(client, uri))
    diag = next(d for d in client.diagnostics[uri] if d.code == "OL301")
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=diag.range,
            context=lsp.CodeActionContext(diagnostics=[diag]),
        )
    )
    fix = next(a for a in actions if a.title.startswith("Fix dynamic dims (N=1)"))
    # lsprotocol's client-side converter reads a CodeAction that carries a command as a
    # bare Command and keeps the nested command as its repr; the JSON on the wire is fine
    cmd = fix.command
    if isinstance(fix, lsp.Command) and isinstance(cmd, str) and cmd.startswith("{"):
        raw = ast.literal_eval(cmd)
        cmd = lsp.Command(title=raw["title"], command=raw["command"], arguments=raw["arguments"])
    assert cmd.command == "onnxlint.applyFix"
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
    )
    assert result["ok"], result
    out = Path(result["path"])
    assert out == ws / "good.static.onnx" and out.is_file()
    assert model.read_bytes() == before  # the original is never touched
    # the new model is linted too, and has no dynamic dims left
    await wait_until(lambda: path_to_uri(out) in client.diagnostics)
    assert "OL301" not in codes(client, path_to_uri(out))
    # a second run never overwrites the first result
    again = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
    )
    assert Path(again["path"]) == ws / "good.static-2.onnx"


async def test_a_saved_configuration_rechecks_once_however_often_it_is_announced(
    client: LanguageClient,
) -> None:
    """The VS Code extension announces a saved configuration file at once and the file
    watcher again later: the models are re-checked once per change of the file."""
    ws = await scanned(client)
    uri = path_to_uri(ws / "bad.onnx")
    statuses: list[Any] = client.seen.statuses  # type: ignore[attr-defined]
    await wait_until(lambda: statuses)  # the scan's
    config = ws / "onnxlint.toml"

    def announce() -> None:
        client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(
                [lsp.FileEvent(uri=path_to_uri(config), type=lsp.FileChangeType.Changed)]
            )
        )

    before = len(statuses)
    config.write_text(CONFIG + 'ignore = ["OL204"]\n')
    announce()  # the extension, on save
    await wait_until(lambda: "OL204" not in codes(client, uri))
    await wait_until(lambda: len(statuses) > before)  # the re-check's report
    announce()  # the watcher, later: the same file
    await asyncio.sleep(1.0)
    assert len(statuses) == before + 1
    config.write_text(CONFIG)  # a real change is re-checked
    announce()
    await wait_until(lambda: "OL204" in codes(client, uri))
    await wait_until(lambda: len(statuses) == before + 2)

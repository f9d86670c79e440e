"""The pygls server: wires LSP messages to the server object (``host``), ``service``,
``workspace``, ``features`` and ``writes``.

No lint logic lives here. Start it with ``onnxlint lsp`` (stdio).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlint.lsp import features
from onnxlint.lsp.documents import use_edited_documents
from onnxlint.lsp.host import CONFIG_NAMES, OnnxLintServer, config_changed, relint_all
from onnxlint.lsp.settings import SECTION, parse_settings
from onnxlint.lsp.workspace import (
    DATA_SUFFIXES,
    graph_uri,
    is_graph_uri,
    is_model,
    is_text_model,
    path_to_uri,
    uri_to_path,
)
from onnxlint.lsp.writes import apply_fix, fix_available, suppression_target, write_rule_docs
from onnxlint.version import __version__

log = logging.getLogger("onnxlint.lsp")

GRAPH_VIEW_REQUEST = "onnxlint/graphView"
GRAPH_VIEW_CLOSED = "onnxlint/graphViewClosed"
RELINT_COMMAND = "onnxlint.relint"
APPLY_FIX_COMMAND = "onnxlint.applyFix"

server = OnnxLintServer()


# -- lifecycle ---------------------------------------------------------------------------
@server.feature(lsp.INITIALIZE)
def on_initialize(ls: OnnxLintServer, params: lsp.InitializeParams) -> None:
    use_edited_documents(ls.workspace)  # a keystroke cuts the text, not every line again
    roots = [uri_to_path(f.uri) for f in params.workspace_folders or []]
    if not roots and params.root_uri:
        roots = [uri_to_path(params.root_uri)]
    ls.roots = [r for r in roots if r is not None]
    opts = params.initialization_options
    if isinstance(opts, dict) and opts:
        settings = parse_settings(opts)
        ls.settings = settings
        ls.service.settings = settings
        ls._reported.update(settings.problems)
        for problem in settings.problems:
            ls.window_show_message(
                lsp.ShowMessageParams(lsp.MessageType.Warning, f"onnxlint: {problem}")
            )


@server.feature(lsp.INITIALIZED)
async def on_initialized(ls: OnnxLintServer, params: lsp.InitializedParams) -> None:
    log.info(
        "onnxlint %s on Python %s, workspace %s",
        __version__,
        sys.version.split()[0],
        ", ".join(map(str, ls.roots)) or "none",
    )
    ls.docs_dir = await asyncio.get_running_loop().run_in_executor(
        ls.service.executor, write_rule_docs
    )

    async def start() -> None:
        await ls.register_watchers()
        await ls.pull_configuration()
        await ls.scan_workspace()

    ls.spawn(start())


@server.feature(lsp.SHUTDOWN)
def on_shutdown(ls: OnnxLintServer, params: None) -> None:
    ls.service.shutdown()


# -- documents ----------------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: OnnxLintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_graph_uri(uri):
        ls.graph_views.add(uri)
        state = ls.service.states.get(ls.model_uri(uri))
        if state is not None:
            ls._publish(state)
        else:
            ls.schedule(ls.model_uri(uri), delay=0)
        return
    path = uri_to_path(uri)
    if path is not None and is_model(path):
        ls.schedule(uri, delay=0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: OnnxLintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if not is_graph_uri(uri) and path is not None and is_model(path):
        ls.schedule(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: OnnxLintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path is not None and path.name in CONFIG_NAMES:
        config_changed(ls, path)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: OnnxLintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_graph_uri(uri):
        ls.view_closed(uri)
        return
    path = uri_to_path(uri)
    if path is not None and is_model(path):
        # back to the file on disk (the unsaved edits are gone)
        if path.exists():
            ls.schedule(uri, delay=0)
        else:
            ls._send(uri, [])


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: OnnxLintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        path = uri_to_path(change.uri)
        if path is None:
            continue
        if path.name in CONFIG_NAMES:
            config_changed(ls, path)
        elif is_model(path):
            if change.type == lsp.FileChangeType.Deleted:
                ls.service.cancel(change.uri)
                ls.service.states.pop(change.uri, None)
                ls.known.pop(change.uri, None)
                ls._send(change.uri, [])
                if ls.model_uri(graph_uri(path)) == change.uri:
                    ls._send(graph_uri(path), [])
            elif change.uri not in ls.workspace.text_documents:
                ls.schedule(change.uri)
        elif path.suffix.lower() in DATA_SUFFIXES:
            # an external-data file changed: re-check the models next to it
            for uri, mpath in list(ls.known.items()):
                if mpath.parent == path.parent:
                    ls.schedule(uri)


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    ls: OnnxLintServer, params: lsp.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if isinstance(settings, dict) and SECTION in settings:
        await ls.apply_settings(settings[SECTION])
    else:
        await ls.pull_configuration()


# -- pull diagnostics ---------------------------------------------------------------------
@server.feature(
    lsp.TEXT_DOCUMENT_DIAGNOSTIC,
    lsp.DiagnosticOptions(
        identifier=SECTION, inter_file_dependencies=False, workspace_diagnostics=False
    ),
)
async def pull_diagnostics(ls: OnnxLintServer, params: lsp.DocumentDiagnosticParams) -> Any:
    uri = params.text_document.uri
    muri = ls.model_uri(uri)
    path = uri_to_path(muri)
    state = await ls.service.analyse_now(muri, path)
    if state is None:
        return lsp.RelatedFullDocumentDiagnosticReport(items=[])
    if is_graph_uri(uri):
        await ls.service.ensure_view(state)
    # the same result presented another way (settings) is another result
    shown = hashlib.sha256(repr(ls.settings.presentation()).encode()).hexdigest()[:8]
    result_id = f"{state.result_id}-{shown}"
    if params.previous_result_id == result_id:
        return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    view = "graph" if is_graph_uri(uri) else ("text" if state.is_text else "file")
    return lsp.RelatedFullDocumentDiagnosticReport(
        items=ls.diagnostics(state, view), result_id=result_id
    )


# -- graph view ---------------------------------------------------------------------------
@server.feature(GRAPH_VIEW_CLOSED)
def graph_view_closed(ls: OnnxLintServer, params: Any) -> None:
    """``{uri}`` of a graph view whose last tab the user closed (VS Code sends ``didClose``
    only when it disposes the document, minutes later)."""
    uri = _param(params, "uri")
    if isinstance(uri, str) and is_graph_uri(uri):
        ls.view_closed(uri)


@server.feature(GRAPH_VIEW_REQUEST)
async def graph_view(ls: OnnxLintServer, params: Any) -> dict[str, Any]:
    """``{uri}`` of a model -> ``{uri, text, nodes: [{path, line}], error}``.

    A binary model's view comes from the view cache (by content hash) or is
    rendered at once; it never waits for a lint. Its diagnostics are published
    on the view's URI: now if the lint of these bytes is known, else when the
    lint scheduled here (or already running) finishes.
    """
    uri = _param(params, "uri")
    if not uri:
        return {"uri": None, "text": "", "nodes": [], "error": "no uri given"}
    muri = ls.model_uri(uri)
    path = uri_to_path(muri)
    if path is None:
        return {"uri": None, "text": "", "nodes": [], "error": f"cannot read {uri}"}
    if is_text_model(path):
        return await _text_view(ls, muri, path)
    started = time.monotonic()
    view = await ls.service.view(muri, path)
    log.info("graph view of %s in %.3f s", muri, time.monotonic() - started)
    if view is None:
        return {"uri": None, "text": "", "nodes": [], "error": f"cannot read {uri}"}
    guri = graph_uri(path)
    ls.graph_views.add(guri)
    ls.view_hashes[guri] = view.content_hash
    state = ls.service.states.get(muri)
    if state is not None and state.content_hash == view.content_hash:
        if view.source is not None and state.view_pending:
            state.source = view.source
        ls._send(muri, [])  # the view shows the model's problems now, the file none
        ls.publish_graph(state)
    else:
        # findings of other bytes would sit on the wrong lines of this text: none until
        # the lint of these bytes is done, which starts once this reply is written
        ls._send(guri, [])
        ls.lint_after(asyncio.current_task(), muri)
    return {"uri": guri, "text": view.text, "nodes": view.nodes, "error": None}


async def _text_view(ls: OnnxLintServer, muri: str, path: Path) -> dict[str, Any]:
    """An ONNX text model is its own view: the user's text and where its nodes are."""
    state = await ls.service.analyse_now(muri, path)
    if state is None:
        return {"uri": None, "text": "", "nodes": [], "error": f"cannot read {muri}"}
    guri = graph_uri(path)
    ls.graph_views.add(guri)
    ls._publish(state)
    if state.source is None:
        lines = [f"# onnxlint: {path.name} could not be rendered as a graph"]
        lines += [f"# {d.code} {d.message}" for d in state.report.diagnostics]
        return {"uri": guri, "text": "\n".join(lines) + "\n", "nodes": [], "error": None}
    return {
        "uri": guri,
        "text": state.source.text,  # what was linted: never a second read of the file
        "nodes": [{"path": p, "line": e.line} for p, e in state.source.nodes.items()],
        "error": None,
    }


def _param(params: Any, key: str) -> Any:
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


# -- editor features ----------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: OnnxLintServer, params: lsp.HoverParams) -> lsp.Hover | None:
    state = await ls.state_for(params.text_document.uri)
    return features.hover(state, params.position) if state else None


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def on_symbols(
    ls: OnnxLintServer, params: lsp.DocumentSymbolParams
) -> list[lsp.DocumentSymbol]:
    state = await ls.state_for(params.text_document.uri)
    return features.document_symbols(state) if state else []


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
async def on_definition(ls: OnnxLintServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    state = await ls.state_for(params.text_document.uri)
    return features.definition(state, params.text_document.uri, params.position) if state else None


@server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
async def on_folding_range(
    ls: OnnxLintServer, params: lsp.FoldingRangeParams
) -> list[lsp.FoldingRange]:
    state = await ls.state_for(params.text_document.uri)
    return features.folding_ranges(state) if state else []


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
async def on_inlay_hints(ls: OnnxLintServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    state = await ls.state_for(params.text_document.uri)
    return features.inlay_hints(state, params.range) if state else []


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
async def on_code_lens(ls: OnnxLintServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    state = await ls.state_for(params.text_document.uri)
    return features.code_lenses(state) if state else []


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
)
async def on_code_action(ls: OnnxLintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    state = await ls.state_for(params.text_document.uri)
    if state is None or state.path is None:
        return []
    target = await asyncio.get_running_loop().run_in_executor(
        ls.service.executor,
        lambda: suppression_target(state.path, ls.roots),  # type: ignore[arg-type]
    )
    if target is None:
        return []
    config_path, config_text, model_rel = target
    uri = params.text_document.uri
    view = "graph" if is_graph_uri(uri) else ("text" if state.is_text else "file")
    on_lines = features.diagnostics_on_lines(state, params.range, view=view, docs_dir=ls.docs_dir)
    return features.code_actions(
        state,
        [*params.context.diagnostics, *on_lines],
        config_path,
        config_text,
        model_rel,
        fix_available(),
    )


@server.command(RELINT_COMMAND)
def relint_command(ls: OnnxLintServer, *args: Any) -> None:
    relint_all(ls)


@server.command(APPLY_FIX_COMMAND)
async def apply_fix_command(ls: OnnxLintServer, *args: Any) -> dict[str, Any]:
    """Apply a graph fix: the result is a NEW model next to the original, never an overwrite."""
    arg = args[0] if args and isinstance(args[0], dict) else {}
    path = uri_to_path(arg.get("model_uri", ""))
    fix = arg.get("fix") or {}
    if path is None or not fix_available():
        return {"ok": False, "error": "automated fixes are not available in this build"}
    try:
        out = await asyncio.get_running_loop().run_in_executor(
            ls.service.executor, lambda: apply_fix(path, fix)
        )
    except Exception as exc:
        msg = f"onnxlint: fix failed: {exc}"
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, msg))
        return {"ok": False, "error": str(exc)}
    ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"onnxlint: wrote {out}"))
    uri = path_to_uri(out)
    ls.schedule(uri, delay=0)
    return {"ok": True, "path": str(out), "uri": uri}


#: the server's garbage-collector thresholds (CPython's default: 700, 10, 10)
GC_THRESHOLDS = (50_000, 20, 20)


def main() -> int:
    logging.basicConfig(level=os.environ.get("ONNXLINT_LSP_LOG", "WARNING").upper())
    # The server keeps the indexes and views of recent models alive (hundreds of thousands
    # of objects for one 10k-node model); with the default thresholds the collector
    # rescans them again and again while a lint or a view allocates: a 10k-node graph
    # view took 0.65-0.9 s instead of 0.3 s with four such models cached. Collections
    # still run, a hundred times less often in the youngest generation.
    gc.set_threshold(*GC_THRESHOLDS)
    from onnxlint.analyses.assignment import keep_verdicts
    from onnxlint.runtime.processes import set_reuse

    # ORT's level-1 worker stays warm between lints: an edit pays for a session, not for
    # a Python start-up and ``import onnxruntime`` (ended at exit, or with its stdin)
    set_reuse(True)
    # and the EP verdicts stay memoised by node facts: a re-lint evaluates new facts only
    keep_verdicts(True)
    # full garbage collections wait until the server is idle (``lsp.collector``)
    server.service.collect_when_idle()
    server.start_io()
    return 0

"""The pygls server: wires LSP messages to ``service``, ``workspace`` and ``features``.

No lint logic lives here. Start it with ``onnxlint lsp`` (stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import os
import stat
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from onnxlint.limits import Limits
from onnxlint.lsp import features
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import SECTION, Settings, parse_settings
from onnxlint.lsp.workspace import (
    DATA_SUFFIXES,
    ModelState,
    file_stamp,
    graph_uri,
    is_graph_uri,
    is_model,
    is_text_model,
    path_to_uri,
    read_model_bytes,
    scan,
    uri_to_path,
)
from onnxlint.version import __version__

log = logging.getLogger("onnxlint.lsp")

GRAPH_VIEW_REQUEST = "onnxlint/graphView"
GRAPH_VIEW_CLOSED = "onnxlint/graphViewClosed"
STATUS_NOTIFICATION = "onnxlint/status"
#: seconds a lens / inlay hint refresh waits for more lints to finish
REFRESH_DELAY = 0.1
RELINT_COMMAND = "onnxlint.relint"
APPLY_FIX_COMMAND = "onnxlint.applyFix"
CONFIG_NAMES = ("pyproject.toml", "onnxlint.toml")
#: a configuration file larger than this gets no suppression edits
CONFIG_MAX_BYTES = 1 << 20
WATCH_GLOBS = (
    "**/*.onnx",
    "**/*.onnxtxt",
    "**/*.{data,bin,onnx_data,weights,pb}",
    "**/{pyproject.toml,onnxlint.toml}",
)


def make_converter() -> Any:
    """pygls' converter, with LSP diagnostics turned into JSON by ``features.diagnostic_json``."""
    from pygls.protocol import default_converter

    converter = default_converter()
    converter.register_unstructure_hook(lsp.Diagnostic, features.diagnostic_json)
    return converter


class OnnxLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "onnxlint",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
            converter_factory=make_converter,
        )
        self.settings = Settings()
        self.roots: list[Path] = []
        self.service = LintService(self._publish, self._open_text)
        self.graph_views: set[str] = set()  # graph view URIs the client shows
        self.docs_dir: Path | None = None
        self.known: dict[str, Path] = {}  # every model URI linted so far
        self._reported: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        #: graph view URI -> content hash of the text last sent to the client
        self.view_hashes: dict[str, str] = {}
        self._refresh_pending = False
        #: configuration file -> its stamp when it last caused a re-check
        self.config_stamps: dict[Path, tuple[int, int, int] | None] = {}

    # -- helpers ------------------------------------------------------------------------
    def _open_text(self, uri: str) -> tuple[str, int | None] | None:
        """The editor's text of a .onnxtxt document, if it is open (unsaved edits count)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or is_graph_uri(uri):
            return None
        return doc.source, doc.version

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def model_uri(self, uri: str) -> str:
        """The model URI for a document URI (graph views map to their model file)."""
        if is_graph_uri(uri):
            path = uri_to_path(uri)
            return path_to_uri(path) if path else uri
        return uri

    def is_current(self, state: ModelState, uri: str) -> bool:
        """Whether ``state`` describes what the client shows at ``uri``.

        An open text document: the lint of its current version. A graph view: the
        lint of the bytes its text was rendered from. A file on disk: any result.
        """
        if is_graph_uri(uri):
            shown = self.view_hashes.get(uri)
            return shown is None or shown == state.content_hash
        doc = self.workspace.text_documents.get(uri)
        return doc is None or state.version == doc.version

    async def state_for(self, uri: str) -> ModelState | None:
        """The linted state behind ``uri`` for what the client shows, with its text map ready.

        Lenses, hints, symbols and hovers answer from the state of the document
        version they are asked about: a lint scheduled or running is waited for;
        if the result still describes another version, they answer nothing (the
        refresh sent after the next lint asks again).
        """
        muri = self.model_uri(uri)
        state = self.service.states.get(muri)
        if state is None or not self.is_current(state, uri):
            await self.service.settle(muri)
            state = self.service.states.get(muri)
        if state is None:
            state = await self.service.analyse_now(muri, uri_to_path(muri))
        if state is None or not self.is_current(state, uri):
            return None
        await self.service.ensure_view(state)
        return state

    def refresh_features(self) -> None:
        """Ask the client to fetch lenses and inlay hints again (after a lint), if it can.

        Coalesced: a burst of lints (the workspace scan) sends one request of each.
        """
        if self._refresh_pending:
            return
        caps = self.client_capabilities.workspace
        lens = caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support
        hint = caps is not None and caps.inlay_hint is not None and caps.inlay_hint.refresh_support
        if not (lens or hint):
            return
        self._refresh_pending = True

        async def send() -> None:
            await asyncio.sleep(REFRESH_DELAY)
            self._refresh_pending = False
            for wanted, method in (
                (lens, lsp.WORKSPACE_CODE_LENS_REFRESH),
                (hint, lsp.WORKSPACE_INLAY_HINT_REFRESH),
            ):
                if not wanted:
                    continue
                try:
                    await asyncio.wait_for(self.protocol.send_request_async(method, None), 10)
                except Exception as exc:  # a client that refuses: nothing to refresh
                    log.debug("%s: %s", method, exc)

        self.spawn(send())

    def _publish(self, state: ModelState) -> None:
        self.known[state.uri] = state.path or Path()
        for note in state.notes:
            if note not in self._reported:
                self._reported.add(note)
                self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, note))
        if state.is_text:
            self._send(state.uri, self.diagnostics(state, "text"), state.version)
        # one set of problems per model: on its graph view while the client shows it,
        # else on the file
        elif state.path is not None and graph_uri(state.path) in self.graph_views:
            self._send(state.uri, [])
            self.publish_graph(state)
        else:
            self.publish_file(state)
        self.refresh_features()
        timing = self.service.timings.get(state.uri)
        log.info(
            "checked %s: %d finding(s), EPs %s, configuration %s%s",
            state.path or state.uri,
            len(state.report.diagnostics),
            ", ".join(state.report.eps) or "none",
            state.config_stamp[0] if state.config_stamp else "none (defaults)",
            f", {timing.finished - timing.scheduled:.3f} s" if timing is not None else "",
        )

    def send_status(self) -> None:
        """``onnxlint/status`` for the client's status bar: version, EPs, models checked."""
        eps = list(self.settings.eps) or sorted(
            {ep for s in self.service.states.values() for ep in s.report.eps}
        )
        self.protocol.notify(
            STATUS_NOTIFICATION, {"version": __version__, "eps": eps, "models": len(self.known)}
        )

    def publish_file(self, state: ModelState) -> None:
        """The diagnostics of a binary model on its file, at once.

        Each then gets its node's range in the graph view and a related location
        there (the Problems panel opens the view at the node): the view is
        rendered in the view thread and the diagnostics go out again, unless a
        newer result was published or the view was opened meanwhile.
        """
        guri = graph_uri(state.path) if state.path is not None else None
        self._send_file(state, guri)
        if guri is None or not state.view_pending:
            return

        async def later() -> None:
            if self.service.states.get(state.uri) is not state:
                return
            await self.service.ensure_view(state)
            if self.service.states.get(state.uri) is not state:
                return
            # made in the view thread: 10,000 findings take a second, the loop answers meanwhile
            diags = await asyncio.get_running_loop().run_in_executor(
                self.service.view_executor, lambda: self.diagnostics(state, "file", guri)
            )
            if self.service.states.get(state.uri) is state and guri not in self.graph_views:
                self._send(state.uri, diags)

        self.spawn(later())

    def diagnostics(
        self, state: ModelState, view: str, view_uri: str | None = None
    ) -> list[lsp.Diagnostic]:
        """``state``'s diagnostics for one of its URIs, as the settings present them."""
        return features.diagnostics_for(
            state,
            view=view,
            docs_dir=self.docs_dir,
            view_uri=view_uri,
            show_hints=self.settings.show_hints,
            per_rule=self.settings.max_problems_per_rule,
        )

    def _send_file(self, state: ModelState, guri: str | None) -> None:
        self._send(state.uri, self.diagnostics(state, "file", guri))

    def view_closed(self, uri: str) -> None:
        """The client no longer shows a graph view: its problems go back to the model file."""
        path = uri_to_path(uri)
        guri = graph_uri(path) if path is not None else uri  # as this server spells it
        for view in (uri, guri):
            self.graph_views.discard(view)
            self.view_hashes.pop(view, None)
        self._send(uri, [])
        if guri != uri:
            self._send(guri, [])
        self._send(guri, [])
        state = self.service.states.get(self.model_uri(guri))
        if state is not None and not state.is_text:
            self.publish_file(state)

    def publish_graph(self, state: ModelState) -> None:
        """The diagnostics of an open graph view, on node lines.

        They need the view's text map: when it is not rendered yet, it is rendered
        in the view thread and the diagnostics go out after, unless a newer result
        for the model has been published meanwhile (that one publishes its own).
        """
        if state.path is None:
            return
        if not state.view_pending:
            self._send_graph(state)
            return

        async def later() -> None:
            # a burst of changes: only the result still current is worth a render
            if self.service.states.get(state.uri) is not state:
                return
            await self.service.ensure_view(state)
            if self.service.states.get(state.uri) is state:
                self._send_graph(state)

        self.spawn(later())

    def _send_graph(self, state: ModelState) -> None:
        assert state.path is not None
        self._send(graph_uri(state.path), self.diagnostics(state, "graph"))

    def _send(self, uri: str, diags: list[lsp.Diagnostic], version: int | None = None) -> None:
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )

    def schedule(self, uri: str, delay: float | None = None) -> None:
        path = uri_to_path(uri)
        self.service.schedule(uri, path, delay)

    def lint_after(self, request: asyncio.Task[Any] | None, uri: str) -> None:
        """Lint ``uri`` once ``request`` is answered.

        pygls serializes and writes a reply in a done-callback of the request's
        task, registered before this one: the reply (a megabyte for a 10k-node
        graph view) goes out before a lint thread starts competing for the GIL.
        """

        async def later() -> None:
            if request is not None:
                await asyncio.wait([request])
            self.schedule(uri, delay=0)

        self.spawn(later())

    async def apply_settings(self, raw: Any) -> None:
        settings = parse_settings(raw)
        for problem in settings.problems:
            self.window_show_message(
                lsp.ShowMessageParams(lsp.MessageType.Warning, f"onnxlint: {problem}")
            )
        changed = settings.key() != self.settings.key() or settings.confirm != self.settings.confirm
        shown = settings.presentation() != self.settings.presentation()
        self.settings = settings
        self.service.settings = settings
        log.info("settings: EPs %s", ", ".join(settings.eps) or "from the configuration file")
        if changed:
            self.recheck()
        elif shown:  # the same results, presented anew
            for state in list(self.service.states.values()):
                self._publish(state)
        self.send_status()

    async def pull_configuration(self) -> None:
        caps = self.client_capabilities.workspace
        if caps is None or not caps.configuration:
            return
        try:
            result = await asyncio.wait_for(
                self.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])
                ),
                timeout=10,
            )
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", exc)
            return
        if result and result[0] is not None:
            await self.apply_settings(result[0])

    async def progress_begin(self, message: str) -> str | None:
        """Start a work-done progress (None when the client cannot show one)."""
        window = self.client_capabilities.window
        if window is None or not window.work_done_progress:
            return None
        token = f"onnxlint-{uuid.uuid4().hex[:8]}"
        try:
            await self.work_done_progress.create_async(token)
            self.work_done_progress.begin(
                token, lsp.WorkDoneProgressBegin(title="onnxlint", message=message, percentage=0)
            )
        except Exception:
            return None
        return token

    def progress_step(self, token: str | None, done: int, total: int, name: str) -> None:
        if token:
            self.work_done_progress.report(
                token,
                lsp.WorkDoneProgressReport(
                    message=f"{done}/{total} {name}", percentage=int(100 * done / max(total, 1))
                ),
            )

    def progress_end(self, token: str | None, message: str) -> None:
        if token:
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=message))

    async def scan_workspace(self) -> None:
        """Lint every model under the workspace folders, reporting work-done progress."""
        loop = asyncio.get_running_loop()
        files = await loop.run_in_executor(self.service.executor, lambda: list(scan(self.roots)))
        token = await self.progress_begin(f"checking {len(files)} model(s)")
        for i, path in enumerate(files, 1):
            uri = path_to_uri(path)
            if uri in self.service.states:
                continue  # opened or changed while scanning: already linted
            state = await self.service.analyse_now(uri, path)
            if state is not None:
                self._publish(state)
                if self.settings.confirm:
                    self.spawn(self.service.confirm(uri, path))
            self.progress_step(token, i, len(files), path.name)
        self.progress_end(token, f"{len(files)} model(s) checked")
        self.send_status()

    def recheck(self) -> None:
        """Re-lint every known model (settings or configuration changed), with progress.

        The models the client shows (open documents, graph views) go first.
        """
        shown = {self.model_uri(u) for u in (*self.workspace.text_documents, *self.graph_views)}
        uris = sorted(self.known, key=lambda u: u not in shown)  # stable: shown ones first
        runs = [(uri, self.service.schedule(uri, uri_to_path(uri), delay=0)) for uri in uris]

        async def report() -> None:
            token = await self.progress_begin(f"re-checking {len(runs)} model(s)")
            for i, (uri, run) in enumerate(runs, 1):
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(run)  # a newer change may supersede it: fine
                path = uri_to_path(uri)
                self.progress_step(token, i, len(runs), path.name if path else uri)
            self.progress_end(token, f"{len(runs)} model(s) checked")
            self.send_status()

        self.spawn(report())

    async def register_watchers(self) -> None:
        caps = self.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if watched is None or not watched.dynamic_registration:
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS]
        )
        try:
            await self.client_register_capability_async(
                lsp.RegistrationParams(
                    registrations=[
                        lsp.Registration(
                            id="onnxlint-watch",
                            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=options,
                        )
                    ]
                )
            )
        except Exception as exc:
            log.warning("could not register file watchers: %s", exc)


server = OnnxLintServer()


# -- lifecycle ---------------------------------------------------------------------------
@server.feature(lsp.INITIALIZE)
def on_initialize(ls: OnnxLintServer, params: lsp.InitializeParams) -> None:
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


def relint_all(ls: OnnxLintServer) -> None:
    ls.service.clear_cache()
    ls.recheck()


def config_changed(ls: OnnxLintServer, path: Path) -> None:
    """Re-check every model after a configuration file changed, once per change.

    A save reaches the server twice: the editor's notice at once (didSave, or the
    VS Code extension's watched-file event) and the file watcher's a second or two
    later. The second finds the file as the first did and re-checks nothing.
    """
    stamp = file_stamp(path)
    if path in ls.config_stamps and ls.config_stamps[path] == stamp:
        return
    ls.config_stamps[path] = stamp
    log.info("configuration %s changed: re-checking %d model(s)", path, len(ls.known))
    relint_all(ls)


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


def suppression_target(model: Path, roots: list[Path]) -> tuple[Path, str | None, str] | None:
    """The configuration file a suppression goes into, its text (None: to create), the model's key.

    None when the configuration file exists but cannot be read as text (a FIFO, a
    device, not UTF-8, over a megabyte): no edit is offered for it.
    """
    from onnxlint.config import find_config_file

    found = find_config_file(model)
    if found is None:
        root = next((r for r in roots if r in model.parents), model.parent)
        found, text = root / "onnxlint.toml", None
    else:
        # read like a model: a FIFO or device named pyproject.toml never blocks the server
        raw = read_model_bytes(found, Limits(max_file_bytes=CONFIG_MAX_BYTES))
        if raw is None:
            what = file_stamp(found)
            if what is None or what[:2] != (stat.S_IFREG, 0):
                return None
            raw = b""  # an empty file (the reader only returns content)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        rel = model.resolve().relative_to(found.parent.resolve()).as_posix()
    except ValueError:
        rel = model.name
    return found, text, rel


def fix_available() -> bool:
    """Whether the automated fixes package exists in this build (it is optional)."""
    import importlib.util

    return importlib.util.find_spec("onnxlint.fixes") is not None


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


def apply_fix(model: Path, fix: dict[str, Any]) -> Path:
    """Run the fix a diagnostic names and write the result beside ``model`` (a new file)."""
    from onnxlint.fixes import fix_shapes
    from onnxlint.fsutil import atomic_write_bytes
    from onnxlint.loader import load

    if fix.get("action") != "fix-shapes":
        raise ValueError(f"no automated fix for {fix.get('action')!r}")
    dims = (fix.get("args") or {}).get("dims") or {}
    if not dims or not all(isinstance(v, int) for v in dims.values()):
        raise ValueError("the fix needs a value for each dynamic dimension: run the command shown")
    loaded = load(model)  # never reads external data: references are kept as they are
    if loaded.model is None:
        raise ValueError(f"cannot load {model.name}")
    result = fix_shapes(loaded.model, dims=dims)
    out = new_file_beside(model, ".static")
    atomic_write_bytes(out, result.model.SerializeToString())
    return out


def new_file_beside(model: Path, tag: str) -> Path:
    """``model.static.onnx``, or ``model.static-2.onnx`` ... when that exists: never overwrite."""
    candidate = model.with_name(f"{model.stem}{tag}{model.suffix}")
    n = 2
    while candidate.exists():
        candidate = model.with_name(f"{model.stem}{tag}-{n}{model.suffix}")
        n += 1
    return candidate


# -- rule docs ----------------------------------------------------------------------------
def write_rule_docs(base: Path | None = None) -> Path | None:
    """Write each rule's documentation as Markdown into a per-user cache folder, once per version.

    ``codeDescription`` links point at these pages, so the docs open in the
    editor without a network. Returns None when nothing can be written.
    """
    from onnxlint.fsutil import atomic_write_text
    from onnxlint.rule import all_rules

    if base is None:
        from onnxlint.cachefs import cache_root, make_private_dir

        base = cache_root() / "rule-docs" / __version__
    try:
        make_private_dir(base)
        for cls in all_rules():
            page = base / f"{cls.code}.md"
            text = cls.docs_markdown()
            if not page.is_file() or page.read_text("utf-8") != text:
                atomic_write_text(page, text)
    except OSError as exc:
        log.warning("rule docs not written: %s", exc)
        return None
    return base


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
    server.start_io()
    return 0

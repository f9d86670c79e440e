"""The language server object: what it knows of the client and the models, and how it
publishes diagnostics, progress, refreshes and its status.

``server.py`` creates one and wires the LSP messages to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from onnxlint.lsp import features
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import SECTION, Settings, parse_settings
from onnxlint.lsp.workspace import (
    ModelState,
    file_stamp,
    graph_uri,
    is_graph_uri,
    path_to_uri,
    scan,
    uri_to_path,
)
from onnxlint.version import __version__

log = logging.getLogger("onnxlint.lsp")

STATUS_NOTIFICATION = "onnxlint/status"
#: seconds a lens / inlay hint refresh waits for more lints to finish
REFRESH_DELAY = 0.1
CONFIG_NAMES = ("pyproject.toml", "onnxlint.toml")
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
            # a keystroke sends the edit, not the document (a printed 10k-node model is
            # 7 MB of text; tests/lsp/test_server_e2e.py)
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
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

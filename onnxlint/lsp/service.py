"""Linting off the request loop: debounced per URI, stale runs dropped, results cached.

The server's asyncio loop never lints. ``LintService.schedule(uri)`` starts (or
restarts) a per-URI task that waits for the debounce delay (proportional to what the
last lint of that URI cost, ``debounce_wait``; the setting is the most; none for a
change to a quickly linted document with no run of it pending, ``leading_edge``), then runs
``workspace.analyse`` in a worker thread. A newer schedule for the same URI
cancels the waiting task; a run already in the worker finishes, but its result
is dropped when a newer generation exists ("cancel stale runs"). Results are
cached by (path, content hash, settings), so re-saving an unchanged file or
re-opening it costs nothing, and a run already going for the same key is
awaited, never started twice.

A binary model's graph view (its text and node <-> line map) depends on the
bytes only: it is rendered in a second thread, kept by content hash, and never
waits for a lint (``view``); diagnostics need only the lint, so a change on disk
is published without rendering anything (``ensure_view`` renders when a view or
an editor feature first needs the text).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from onnxlint.lsp.collector import IdleCollector
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.lsp.workspace import (
    GraphView,
    ModelState,
    analyse,
    build_view,
    config_for,
    config_stamp,
    content_hash,
    file_stamp,
    read_model_bytes,
)

log = logging.getLogger("onnxlint.lsp")

#: called on the event loop with each fresh state (publishes diagnostics)
Publisher = Callable[[ModelState], Awaitable[None] | None]
#: the text of an open document, or None to read the file
TextSource = Callable[[str], tuple[str, int | None] | None]

CACHE_SIZE = 256
#: lint results kept, counted in model nodes: a cached 10k-node result holds its model and
#: index (about 33 MB), so 256 of them would be gigabytes; the newest is always kept
CACHE_NODES = 100_000
#: graph views kept by content hash (a 10k-node view is ~1 MB of text plus its map),
#: at most this many and at most this many nodes in all; the newest is always kept
VIEW_CACHE_SIZE = 4
VIEW_CACHE_NODES = 40_000
#: superseded runs ``settle`` follows before it gives up (a change per run, endlessly)
SETTLE_ROUNDS = 20
#: a document whose last lint took less than this is linted without a debounce wait: a
#: run superseded by the next keystroke costs the worker less than any wait would
NO_WAIT_BELOW_S = 0.05
#: otherwise the wait is this share of the last lint's time, at most ``debounce_ms``
WAIT_SHARE = 0.5
#: a change to a document with nothing of it scheduled or running, whose last lint took
#: less than this, is linted at once: a wait only spares the worker a run that a further
#: keystroke makes stale, and such a run, started at once, delays the next one by less
#: than this; a change while a run is scheduled or running waits (``debounce_wait``)
LEADING_EDGE_BELOW_S = 0.25


def debounce_wait(last_cost: float | None, debounce_ms: int) -> float:
    """Seconds to wait after a change before linting a document whose last lint took
    ``last_cost`` seconds (None: not linted yet, the whole ``debounce_ms``).

    The wait only saves the worker from runs that a further keystroke makes stale, so it
    is proportional to what such a run costs: none for a document that lints in a few
    milliseconds, a short one for a big model; ``debounce_ms`` (the setting) is the most.
    """
    cap = debounce_ms / 1000
    if last_cost is None:
        return cap
    if last_cost < NO_WAIT_BELOW_S:
        return 0.0
    return min(cap, WAIT_SHARE * last_cost)


def leading_edge(last_cost: float | None) -> bool:
    """Whether a change to a document with nothing of it scheduled or running is linted at
    once: its last lint took less than ``LEADING_EDGE_BELOW_S`` (None: not linted yet, so
    its cost is not known and it waits)."""
    return last_cost is not None and last_cost < LEADING_EDGE_BELOW_S


@dataclass
class Timing:
    """How long the last run of a URI took (for the latency measurement and logs)."""

    scheduled: float
    started: float = 0.0
    finished: float = 0.0
    #: the debounce wait this run was given (``debounce_wait``)
    wait: float = 0.0


class LintService:
    def __init__(
        self,
        publish: Publisher,
        open_text: TextSource,
        settings: Settings | None = None,
        workers: int = 1,
    ) -> None:
        self.publish = publish
        self.open_text = open_text
        self.settings = settings or Settings()
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnxlint-lint")
        self.states: dict[str, ModelState] = {}
        self.timings: dict[str, Timing] = {}
        #: seconds the last analysis of each URI took in the worker (cache hits aside)
        self.costs: dict[str, float] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._confirms: dict[str, asyncio.Task[None]] = {}
        self._generation: dict[str, int] = {}
        self._cache: OrderedDict[tuple[object, ...], ModelState] = OrderedDict()
        self._cached_nodes = 0
        self._inflight: dict[tuple[object, ...], asyncio.Future[ModelState]] = {}
        self.runs = 0  # analyses actually executed (cache misses), for tests and logs
        # views render here, so a view request never queues behind a lint in ``executor``
        self.view_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="onnxlint-view")
        self.views: OrderedDict[str, GraphView] = OrderedDict()
        self.view_runs = 0  # graph views actually rendered (cache misses)
        #: garbage collection off the change -> diagnostics path (the server's ``main``
        #: turns it on; ``collector``); None: the collector runs as Python sets it
        self.collector: IdleCollector | None = None

    def collect_when_idle(self) -> None:
        """Freeze what is alive after each publish and collect once idle (``collector``)."""
        self.collector = IdleCollector(self.busy)

    def busy(self) -> bool:
        """Whether a lint is scheduled, waiting for its debounce, or running."""
        return bool(self._inflight) or any(not t.done() for t in self._tasks.values())

    # -- scheduling ---------------------------------------------------------------------
    def schedule(
        self, uri: str, path: Path | None, delay: float | None = None
    ) -> asyncio.Task[None]:
        """Lint ``uri`` after the debounce delay; restarts the wait if already scheduled."""
        gen = self._generation.get(uri, 0) + 1
        self._generation[uri] = gen
        if self.collector is not None:
            self.collector.activity()
        pending = self._tasks.get(uri)
        quiet = pending is None or pending.done()
        for tasks in (self._tasks, self._confirms):
            old = tasks.get(uri)
            if old is not None and not old.done():
                old.cancel()
        now = time.monotonic()
        if delay is None:
            cost = self.costs.get(uri)
            quick = quiet and leading_edge(cost)
            wait = 0.0 if quick else debounce_wait(cost, self.settings.debounce_ms)
        else:
            wait = delay
        self.timings[uri] = Timing(scheduled=now, wait=wait)
        task = asyncio.get_running_loop().create_task(self._run(uri, path, gen, wait))
        self._tasks[uri] = task
        return task

    def cancel(self, uri: str) -> None:
        self._generation[uri] = self._generation.get(uri, 0) + 1
        for tasks in (self._tasks, self._confirms):
            task = tasks.pop(uri, None)
            if task is not None and not task.done():
                task.cancel()

    async def settle(self, uri: str) -> None:
        """Wait until no lint of ``uri`` is scheduled or running (its confirmation aside).

        A run superseded while waited for is followed by the newer one; for editor
        features that must answer from the state of the latest document version.
        """
        for _ in range(SETTLE_ROUNDS):
            task = self._tasks.get(uri)
            if task is None or task.done():
                return
            with contextlib.suppress(asyncio.CancelledError):
                # shielded: the caller giving up must not cancel the run itself
                await asyncio.shield(task)

    async def _run(self, uri: str, path: Path | None, gen: int, wait: float) -> None:
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            state = await self.analyse_now(uri, path, gen)
        except Exception:
            # the task is kept in ``_tasks``: asyncio would never report its exception
            log.exception("linting %s failed", uri)
            return
        if state is None or self._generation.get(uri) != gen:
            return  # a newer change arrived while this one ran: its result would be stale
        if path is not None and self.open_text(uri) is None and not os.path.lexists(path):
            # deleted after it was read (a client may send no Deleted event): its findings
            # would stay in the editor for a file that is gone, as for one gone before
            self._forget(uri)
            return
        result = self.publish(state)
        if asyncio.iscoroutine(result):
            await result
        if self.collector is not None:
            self.collector.published()
        if self.settings.confirm:
            # on its own: real sessions take long, and ``settle`` waits for the lint only
            self._confirms[uri] = asyncio.get_running_loop().create_task(
                self.confirm(uri, path, gen)
            )

    async def confirm(self, uri: str, path: Path | None, gen: int | None = None) -> None:
        """With ``onnxlint.confirm`` on: real ORT sessions after the static results are out.

        Runs in the same worker; its diagnostics replace the predictions when they
        arrive, unless the model changed meanwhile.
        """
        state = self.states.get(uri)
        if not self.settings.confirm or path is None or state is None or state.report.fatal:
            return
        gen = self._generation.get(uri, 0) if gen is None else gen
        settings = self.settings
        data = state.content_hash
        loop = asyncio.get_running_loop()
        # the loader reads the file again: a FIFO swapped in meanwhile is reported, not read
        confirmed = await loop.run_in_executor(
            self.executor,
            lambda: analyse(uri, path, None, settings, version=state.version, confirm_mode="run"),
        )
        if self._generation.get(uri, 0) != gen or confirmed.content_hash != data:
            return  # the model changed while its sessions ran: that result is stale
        self.states[uri] = confirmed
        result = self.publish(confirmed)
        if asyncio.iscoroutine(result):
            await result

    async def analyse_now(
        self, uri: str, path: Path | None, gen: int | None = None
    ) -> ModelState | None:
        """Analyse ``uri`` in the worker (or from the cache) and remember the state."""
        loop = asyncio.get_running_loop()
        opened = self.open_text(uri)
        version: int | None = None
        text: str | None = None
        if opened is not None:
            text, version = opened
        elif path is None:
            return None

        settings = self.settings

        buffer: str | None = None  # ``text`` when ``data`` is its UTF-8 encoding

        def prepare() -> tuple[bytes | None, object, tuple[object, ...]]:
            nonlocal buffer
            # file reads and the config lookup touch the disk: keep them off the loop too
            if text is not None:
                try:
                    data: bytes | None = text.encode("utf-8")
                    buffer = text  # the analysis need not decode it again
                except UnicodeEncodeError:
                    # a client may send lone surrogates (JSON "\udcff"): kept as the invalid
                    # UTF-8 they stand for, so the loader reports OL006 instead of this raising
                    data = text.encode("utf-8", "surrogatepass")
            else:
                assert path is not None
                data = read_model_bytes(path, config_for(path, settings)[0].limits)
            # a file that cannot be read as a model (FIFO, device, missing) is keyed by
            # what it is; the loader says why when it is linted
            what = content_hash(data) if data is not None else file_stamp(path)  # type: ignore[arg-type]
            return data, what, config_stamp(path)

        data, what, stamp = await loop.run_in_executor(self.executor, prepare)
        key = (str(path), what, settings.key(), settings.confirm, stamp)
        timing = self.timings.setdefault(uri, Timing(scheduled=time.monotonic()))
        timing.started = time.monotonic()
        state = self._cache.get(key)
        if state is not None:
            self._cache.move_to_end(key)
        else:
            if what is None:  # the file is gone
                self._forget(uri)
                return None
            # cached confirmations are free to show; sessions only run in ``confirm``
            mode = "cache-only" if settings.confirm else "off"

            # the document's text map before this change: the new map reuses what held
            before = self.states.get(uri)
            previous = before.source if before is not None and before.is_text else None
            # the latest result: a binary model's is carried over when only metadata
            # changed, a text document's model takes an edit inside one node statement
            prior = before

            def work() -> ModelState:
                t0 = time.monotonic()
                try:
                    return analyse(
                        uri,
                        path,
                        data,
                        settings,
                        version=version,
                        confirm_mode=mode,
                        previous=previous,
                        prior=prior,
                        data_hash=what if isinstance(what, str) else None,
                        buffer=buffer,
                    )
                finally:
                    self.costs[uri] = time.monotonic() - t0  # the next debounce wait

            run = self._start(key, work)
            # shielded: a caller cancelled by a newer change must not cancel the run that
            # another caller (a view request, the next change with the same bytes) awaits
            state = await asyncio.shield(run)
        state.version = version
        timing.finished = time.monotonic()
        if gen is None or self._generation.get(uri) == gen:
            old = self.states.get(uri)
            self.states[uri] = state
            if old is not None and old is not state and old.is_text and old.source is not None:
                # what the text map keeps for the next edit (the masked text, per node
                # offsets) is only worth it on the latest state; a cached older one maps afresh
                old.source.forget_edits()
        return state

    def _start(
        self, key: tuple[object, ...], work: Callable[[], ModelState]
    ) -> asyncio.Future[ModelState]:
        """The run for ``key``: the one in flight, else a new one in the worker.

        Its result goes into the cache when it finishes, even if nobody awaits it
        any more (the next change may well bring the same bytes back).
        """
        run = self._inflight.get(key)
        if run is None:
            self.runs += 1
            run = asyncio.get_running_loop().run_in_executor(self.executor, work)
            self._inflight[key] = run

            def done(fut: asyncio.Future[ModelState]) -> None:
                self._inflight.pop(key, None)
                # a file rewritten while it was linted: the result is not that of ``key``
                if not fut.cancelled() and fut.exception() is None:
                    state = fut.result()
                    linted = key[1] if isinstance(key[1], str) else ""  # "": unreadable
                    if state.content_hash == linted:
                        self._remember(key, state)

            run.add_done_callback(done)
        return run

    # -- graph views ----------------------------------------------------------------------
    async def view(self, uri: str, path: Path) -> GraphView | None:
        """The graph view of ``path``'s current bytes: cached, else rendered now.

        Never waits for a lint: a lint of the same bytes that is already done lends
        its index; otherwise the model is loaded and rendered in the view thread
        while its lint runs (or is scheduled by the caller) in the worker. None
        when the file cannot be read.
        """
        loop = asyncio.get_running_loop()

        settings = self.settings

        def read() -> bytes | None:
            return read_model_bytes(path, config_for(path, settings)[0].limits)

        data = await loop.run_in_executor(self.view_executor, read)
        if data is None:
            if file_stamp(path) is None:
                return None
            # a FIFO, a device, an empty file: a text that says why, never cached
            return await loop.run_in_executor(
                self.view_executor, lambda: build_view(path, None, settings)
            )
        digest = content_hash(data)
        view = self.cached_view(digest)
        if view is not None:
            return view
        state = self.states.get(uri)
        if state is not None and state.content_hash == digest and not state.is_text:
            await self.ensure_view(state)
            source = state.source
            if source is not None:
                view = GraphView.of(digest, source)
                self._keep_view(view)
                return view
        self.view_runs += 1
        # the latest result of a binary model lends its index when only metadata changed
        prior = state if state is not None and not state.is_text else None
        view = await loop.run_in_executor(
            self.view_executor, lambda: build_view(path, data, settings, prior)
        )
        self._keep_view(view)
        return view

    async def ensure_view(self, state: ModelState) -> None:
        """Give ``state`` its graph view text map (from the cache, else rendered off the loop)."""
        if not state.view_pending:
            return
        view = self.cached_view(state.content_hash)
        if view is not None and view.source is not None:
            state.source = view.source
            return

        def render() -> tuple[SourceMap | None, bool]:
            # one view thread: a render already queued for this state leaves nothing to do
            todo = state.view_pending
            return state.render_view(), todo

        source, rendered = await asyncio.get_running_loop().run_in_executor(
            self.view_executor, render
        )
        if rendered:
            self.view_runs += 1
        if source is not None:
            self._keep_view(GraphView.of(state.content_hash, source))

    def cached_view(self, digest: str) -> GraphView | None:
        view = self.views.get(digest)
        if view is not None:
            self.views.move_to_end(digest)
        return view

    def _keep_view(self, view: GraphView) -> None:
        self.views[view.content_hash] = view
        self.views.move_to_end(view.content_hash)
        while len(self.views) > 1 and (
            len(self.views) > VIEW_CACHE_SIZE
            or sum(len(v.nodes) for v in self.views.values()) > VIEW_CACHE_NODES
        ):
            self.views.popitem(last=False)

    def _forget(self, uri: str) -> None:
        self.states.pop(uri, None)
        return None

    def _remember(self, key: tuple[object, ...], state: ModelState) -> None:
        old = self._cache.pop(key, None)
        if old is not None:
            self._cached_nodes -= _weight(old)
        self._cache[key] = state
        self._cached_nodes += _weight(state)
        while len(self._cache) > 1 and (
            len(self._cache) > CACHE_SIZE or self._cached_nodes > CACHE_NODES
        ):
            _, dropped = self._cache.popitem(last=False)
            self._cached_nodes -= _weight(dropped)

    def clear_cache(self) -> None:
        """Forget lint results (configuration changed); views depend on bytes only and stay."""
        self._cache.clear()
        self._cached_nodes = 0

    async def drain(self) -> None:
        """Wait for every scheduled run and confirmation (tests, shutdown)."""
        while True:
            tasks = [t for t in (*self._tasks.values(), *self._confirms.values()) if not t.done()]
            if not tasks:
                return
            for t in tasks:  # a run finishing may start its confirmation: look again
                with contextlib.suppress(asyncio.CancelledError):
                    await t

    def shutdown(self) -> None:
        for task in (*self._tasks.values(), *self._confirms.values()):
            task.cancel()
        if self.collector is not None:
            self.collector.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.view_executor.shutdown(wait=False, cancel_futures=True)
        from onnxlint.runtime.processes import drop_spare

        drop_spare()  # the warm level-1 worker (``set_reuse`` in the server's main)


def _weight(state: ModelState) -> int:
    """What a cached result costs, in model nodes (at least 1; fixed once linted)."""
    nodes = state.report.stats.get("nodes")
    return max(1, nodes if isinstance(nodes, int) else 0)

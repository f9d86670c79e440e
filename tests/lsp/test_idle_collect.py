"""The server's full garbage collections wait until it is idle (issue 19,
``onnxlint.lsp.collector``): after a publish what is alive is frozen, so the next
lint's collections do not scan the results the server keeps; the cyclic garbage of
replaced results is collected once nothing is scheduled or running, and a change
that arrives first postpones that collection."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from onnxlint.lsp.collector import IdleCollector
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, path_to_uri
from tests.lsp.models import BAD, GOOD, write_model

IDLE_S = 0.05


class _Cycle:
    """An object that only the collector can free: it refers to itself."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed() -> Iterator[None]:
    """Whatever a test froze goes back to the collector afterwards."""
    yield
    gc.unfreeze()


def _service(published: list[ModelState]) -> LintService:
    svc = LintService(published.append, lambda _u: None, Settings(debounce_ms=0))
    svc.collect_when_idle()
    assert svc.collector is not None
    svc.collector.idle_s = IDLE_S
    return svc


def test_a_publish_freezes_and_the_idle_server_collects_the_cycles(
    tmp_path: Path, thawed: None
) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> None:
        svc = _service(published)
        garbage = _Cycle()
        gone = weakref.ref(garbage)
        del garbage  # unreachable, but a cycle: reference counting cannot free it
        gc.unfreeze()
        before = gc.get_freeze_count()
        gc.disable()  # the cycle lives until the publish, as a replaced result's would
        try:
            await svc.schedule(uri, model, delay=0)
        finally:
            gc.enable()
        assert len(published) == 1
        # after the publish what is alive is frozen: the next lint's passes skip it, even
        # a full one
        assert gc.get_freeze_count() > before
        gc.collect()
        assert gone() is not None
        assert svc.collector is not None and svc.collector.collections == 0
        await asyncio.sleep(IDLE_S * 20)
        assert svc.collector.collections == 1
        assert gone() is None  # the idle full pass freed it
        assert gc.get_freeze_count() > 0  # and froze what is alive again
        svc.shutdown()
        assert gc.get_freeze_count() == 0  # a closed service gives everything back

    asyncio.run(scenario())


def test_a_change_before_the_idle_period_postpones_the_collection(
    tmp_path: Path, thawed: None
) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> None:
        svc = _service(published)
        assert svc.collector is not None
        svc.collector.idle_s = 60.0  # longer than the test: only a new publish restarts it
        await svc.schedule(uri, model, delay=0)
        pending = svc.collector._pending
        assert pending is not None and not pending.done()
        write_model(model, GOOD)
        task = svc.schedule(uri, model, delay=0)  # the change cancels the waiting collection
        await asyncio.sleep(0)
        assert pending.cancelled()
        await task
        assert svc.collector.collections == 0 and len(published) == 2
        svc.shutdown()

    asyncio.run(scenario())


def test_no_collection_while_a_lint_is_scheduled(thawed: None) -> None:
    async def scenario() -> None:
        busy = [True]
        collector = IdleCollector(lambda: busy[0], idle_s=IDLE_S)
        collector.published()
        await asyncio.sleep(IDLE_S * 10)
        assert collector.collections == 0  # the lint's own publish will try again
        busy[0] = False
        collector.published()
        await asyncio.sleep(IDLE_S * 10)
        assert collector.collections == 1
        collector.close()

    asyncio.run(scenario())


def test_a_service_collects_as_python_does_unless_asked(tmp_path: Path, thawed: None) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    published: list[ModelState] = []

    async def scenario() -> None:
        svc = LintService(published.append, lambda _u: None, Settings(debounce_ms=0))
        gc.unfreeze()
        await svc.schedule(path_to_uri(model), model, delay=0)
        assert len(published) == 1 and svc.collector is None
        assert gc.get_freeze_count() == 0
        svc.shutdown()

    asyncio.run(scenario())

"""The debounce wait follows what a document's lint cost (issue 19): none for a document
that lints in a few milliseconds, half the last lint's time for a big one, the setting
at most, and the whole setting for a document not linted yet; and none for a change
to a document that lints quickly when no run of it is pending (the leading edge)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from onnxlint.lsp.service import (
    LEADING_EDGE_BELOW_S,
    NO_WAIT_BELOW_S,
    LintService,
    debounce_wait,
    leading_edge,
)
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, path_to_uri
from tests.lsp.models import BAD, GOOD, NESTED, write_model

CASES = [
    # (last lint's seconds, debounceMs, the wait)
    (None, 300, 0.3),
    (None, 0, 0.0),
    (0.004, 300, 0.0),
    (NO_WAIT_BELOW_S / 2, 60_000, 0.0),
    (0.2, 300, 0.1),
    (0.4, 300, 0.2),
    (3.5, 300, 0.3),
    (3.5, 0, 0.0),
]


@pytest.mark.parametrize(("cost", "debounce_ms", "wait"), CASES)
def test_the_wait_is_proportional_to_the_last_lint(
    cost: float | None, debounce_ms: int, wait: float
) -> None:
    assert debounce_wait(cost, debounce_ms) == pytest.approx(wait)


def test_a_fast_document_is_linted_without_waiting_the_setting(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> None:
        # a debounce of a minute: a run that waited for it would never finish in the test
        svc = LintService(published.append, lambda _u: None, Settings(debounce_ms=60_000))
        await svc.schedule(uri, model, delay=0)  # the open: linted at once, its cost measured
        assert uri in svc.costs and svc.runs == 1
        svc.costs[uri] = NO_WAIT_BELOW_S / 10  # as a document that lints in a few ms
        write_model(model, GOOD)
        task = svc.schedule(uri, model)
        assert svc.timings[uri].wait == 0.0
        await asyncio.wait_for(task, 30)
        assert svc.runs == 2 and len(published) == 2
        assert svc.costs[uri] > 0  # measured again, for the next change
        # a document whose lint took long waits the most the setting allows, and three
        # changes inside that wait are one run
        svc.costs[uri] = 1000.0
        write_model(model, BAD)
        for _ in range(3):
            task = svc.schedule(uri, model)
        assert svc.timings[uri].wait == 60.0
        svc.cancel(uri)
        assert svc.runs == 2
        svc.shutdown()

    asyncio.run(scenario())


EDGES = [
    # (last lint's seconds, linted at once when nothing of it is pending)
    (None, False),  # not linted yet: its cost is not known
    (0.0, True),
    (0.1, True),
    (LEADING_EDGE_BELOW_S, False),  # a slow document: a stale run would cost too much
    (3.5, False),
]


@pytest.mark.parametrize(("cost", "at_once"), EDGES)
def test_a_change_with_no_run_pending_is_linted_at_once(cost: float | None, at_once: bool) -> None:
    assert leading_edge(cost) is at_once


def test_only_a_change_with_no_run_pending_skips_the_wait(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[ModelState] = []

    async def scenario() -> None:
        svc = LintService(published.append, lambda _u: None, Settings(debounce_ms=60_000))
        await svc.schedule(uri, model, delay=0)
        svc.costs[uri] = 0.1  # a document that lints in 100 ms
        write_model(model, GOOD)
        first = svc.schedule(uri, model)
        assert svc.timings[uri].wait == 0.0
        await asyncio.wait_for(first, 30)
        assert svc.runs == 2 and len(published) == 2
        # two changes in a row: the first is linted at once, the second, which finds it
        # pending, waits half the last lint (and cancels it: one run for both)
        svc.costs[uri] = 0.1
        write_model(model, NESTED)  # content the cache has not seen
        svc.schedule(uri, model)
        assert svc.timings[uri].wait == 0.0
        task = svc.schedule(uri, model)
        assert svc.timings[uri].wait == pytest.approx(0.05)
        await asyncio.wait_for(task, 30)
        assert svc.runs == 3
        svc.shutdown()

    asyncio.run(scenario())

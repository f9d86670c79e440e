"""A lint runs with fewer passes of the cyclic garbage collector (issue 19): CPython's
young-generation threshold of 700 made it collect hundreds of times per lint, and walk
every live object a few times, while a lint allocates many long-lived objects and few
cycles. The tests check the mechanism (the threshold inside and after a lint), not time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from onnxlint import engine
from tests.conftest import parse
from tests.performance.test_stages import MODEL


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_a_lint_raises_the_young_threshold_and_puts_it_back(
    thresholds: tuple[int, int, int],
) -> None:
    seen: list[tuple[int, int, int]] = []
    engine.lint(parse(MODEL), eps=["qnn"], observe=lambda ctx, r: seen.append(gc.get_threshold()))
    assert seen == [(engine.LINT_GC_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == thresholds


def test_the_what_if_lint_inside_keeps_it_raised_until_the_outer_one_ends(
    thresholds: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The what-if's pinned copy is linted inside the lint: the inner end must not put
    the caller's threshold back while the outer lint still runs."""
    from onnxlint import what_if

    after_inner: list[int] = []
    real = what_if.what_ifs

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)  # the nested lint has ended here
        after_inner.append(gc.get_threshold()[0])
        return out

    monkeypatch.setattr(what_if, "what_ifs", spy)
    report = engine.lint(parse(MODEL), eps=["qnn"], partition_summary=True)
    assert report.what_ifs  # the dynamic dim gives QNN a what-if: a nested lint ran
    assert after_inner == [engine.LINT_GC_THRESHOLD]
    assert gc.get_threshold() == thresholds


def test_a_lint_that_raises_puts_the_threshold_back(thresholds: tuple[int, int, int]) -> None:
    with pytest.raises(engine.UsageError):
        engine.lint(parse(MODEL), eps=["no-such-ep"])
    assert gc.get_threshold() == thresholds


def test_collection_turned_off_and_a_higher_threshold_are_left_alone() -> None:
    saved = gc.get_threshold()
    try:
        seen: list[Any] = []
        for setting in ((0, 10, 10), (50_000, 10, 10)):
            gc.set_threshold(*setting)
            engine.lint(parse(MODEL), observe=lambda ctx, r: seen.append(gc.get_threshold()))
            assert seen[-1] == setting and gc.get_threshold() == setting
        assert len(seen) == 2
    finally:
        gc.set_threshold(*saved)

"""pytest plugin (entry point ``pytest11: onnxlint``): lint models exported during tests.

- ``--onnxlint-ep EP`` (repeatable, priority order) or the ini option
  ``onnxlint_ep``: the EPs that ``onnxlint_report`` and
  ``onnxlint.testing.assert_deployable`` check when a test names none.
- ``onnxlint_report`` fixture: a callable ``onnxlint_report(model, ep=None,
  config=None) -> Report`` that lints a model (path, bytes, ModelProto) and
  records the findings, without failing the test.
- A terminal summary section ``onnxlint`` listing each model checked in the
  session (by the fixture or by ``assert_deployable``) with its findings.

The plugin is loaded in every pytest run where onnxlint is installed, so it
imports nothing heavy at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

#: findings shown per model in the summary; the rest are counted
MAX_LINES_PER_MODEL = 20


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("onnxlint", "onnxlint: lint ONNX models for deployment")
    group.addoption(
        "--onnxlint-ep",
        action="append",
        dest="onnxlint_eps",
        metavar="EP",
        default=None,
        help="execution provider to lint models for (repeatable, priority order; default qnn)",
    )
    group.addoption(
        "--onnxlint-no-summary",
        action="store_true",
        dest="onnxlint_no_summary",
        help="do not list linted models in the terminal summary",
    )
    parser.addini(
        "onnxlint_ep",
        type="args",
        default=[],
        help="execution providers for onnxlint in priority order (overridden by --onnxlint-ep)",
    )


def session_eps(config: pytest.Config) -> list[str]:
    """``--onnxlint-ep`` values (comma lists allowed), else the ini option."""
    raw = config.getoption("onnxlint_eps") or config.getini("onnxlint_ep") or []
    return [e.strip() for item in raw for e in str(item).split(",") if e.strip()]


_SAVED_STATE = pytest.StashKey[tuple[list[str], list[object]]]()


def pytest_configure(config: pytest.Config) -> None:
    from onnxlint import testing

    # a pytest run inside a pytest run (pytester) must not leak its EPs or records outwards
    eps = session_eps(config)
    _check_eps(eps)
    # pytest's Stash.__setitem__ is generic in a way mypy cannot solve here
    config.stash[_SAVED_STATE] = (testing.SESSION_EPS, testing.CHECKED)  # type: ignore[misc]
    testing.SESSION_EPS = eps
    _listen_for_progress(config)
    testing.CHECKED = []


def _listen_for_progress(config: pytest.Config) -> None:
    """Long work in a test (``check_export``'s exports, ``--confirm`` sessions) says what it is
    doing on the terminal, past pytest's capture (``-v`` and above only)."""
    from onnxlint import progress

    if config.get_verbosity() < 1:
        return

    def show(message: str) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"onnxlint: {message}")

    progress.set_listener(show)


def _check_eps(eps: list[str]) -> None:
    """An unknown EP is a usage error at start-up, not a traceback in every test that lints."""
    if not eps:
        return  # nothing to check: the engine stays unimported in test runs that never lint
    from onnxlint.config import Config
    from onnxlint.engine import UsageError, resolve_eps

    try:
        resolve_eps(eps, Config())
    except UsageError as exc:
        raise pytest.UsageError(f"--onnxlint-ep / onnxlint_ep: {exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    from onnxlint import progress, testing

    progress.set_listener(None)
    saved = config.stash.get(_SAVED_STATE, None)
    if saved is not None:
        testing.SESSION_EPS, testing.CHECKED = saved  # type: ignore[assignment]


@pytest.fixture
def onnxlint_report(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Lint a model for the session's EPs and record it for the summary; never fails the test."""
    from onnxlint import testing

    def lint(model: Any, ep: Any = None, config: Any = None) -> Any:
        report = testing.lint_model(model, ep, config)
        # PYTEST_CURRENT_TEST already names this test; the node id is more robust
        testing.CHECKED[-1].test = request.node.nodeid
        return report

    return lint


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from onnxlint import testing

    if not testing.CHECKED or config.getoption("onnxlint_no_summary"):
        return
    lines = summary_lines(testing.CHECKED)
    terminalreporter.write_sep("=", "onnxlint")
    for line in lines:
        terminalreporter.write_line(line)


def summary_lines(checked: list[Any]) -> list[str]:
    """The summary section: one header per checked model, then its findings."""
    from onnxlint.render.text import render_plain

    out: list[str] = []
    totals = {"error": 0, "warning": 0, "info": 0, "hint": 0}
    for item in checked:
        report = item.report
        for label, n in report.counts().items():
            totals[label] += n
        eps = " > ".join(report.eps) or "default EPs"
        test = f"{item.test}: " if item.test else ""
        out.append(f"{test}{report.summary()} [{eps}]")
        body = [line for line in render_plain([report]).splitlines() if line]
        out += [f"    {line}" for line in body[:MAX_LINES_PER_MODEL]]
        if len(body) > MAX_LINES_PER_MODEL:
            out.append(f"    ... {len(body) - MAX_LINES_PER_MODEL} more lines")
    n = len(checked)
    out.append(
        f"onnxlint: {n} model{'s' if n != 1 else ''} checked: "
        + ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in totals.items())
    )
    return out

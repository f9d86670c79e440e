"""Assertions for test suites in training repositories.

``assert_deployable(model, ep="qnn")`` lints a model (a path, bytes, an
``onnx.ModelProto``, or a report already made, e.g. by
``onnxlint.torch.check_export``) and raises an ``AssertionError`` whose
message is the rendered findings (where, what, how to fix) when any is at or
above ``fail_on``. It works in any test runner; under pytest the onnxlint
plugin also lists every model checked this way in the session summary.

``confirm=True`` also creates a real ONNX Runtime session on the first EP in
an isolated worker (``onnxlint.runtime``): a session that fails, or that
silently runs on CPU only, fails the assertion; nodes that fell back to CPU
fail it when ``fail_on`` is ``warning`` or lower.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from onnxlint.config import Config
from onnxlint.diagnostics import Severity
from onnxlint.report import LintError, Report

#: the EP checked when neither the call nor ``pytest --onnxlint-ep`` names one
DEFAULT_EP = "qnn"


@dataclass
class Checked:
    """A model checked during a test session, for the pytest plugin's summary."""

    test: str
    report: Report


#: filled by every check; the pytest plugin prints and clears it
CHECKED: list[Checked] = []
#: set by the pytest plugin from ``--onnxlint-ep`` / the ``onnxlint_ep`` ini option
SESSION_EPS: list[str] = []


def current_test() -> str:
    """The running pytest test's node id (``PYTEST_CURRENT_TEST`` minus the phase)."""
    raw = os.environ.get("PYTEST_CURRENT_TEST", "")
    return raw.rsplit(" ", 1)[0] if raw else ""


def record(report: Report, test: str | None = None) -> Report:
    """Remember ``report`` for the session summary; returns it unchanged."""
    CHECKED.append(Checked(test=test if test is not None else current_test(), report=report))
    return report


def resolve_eps(ep: str | Sequence[str] | None) -> list[str]:
    """``ep`` as a list; None means the pytest option's EPs, else :data:`DEFAULT_EP`."""
    if ep is None:
        return list(SESSION_EPS) or [DEFAULT_EP]
    return [ep] if isinstance(ep, str) else list(ep)


def lint_model(
    model: Any,
    ep: str | Sequence[str] | None = None,
    config: Config | dict[str, Any] | None = None,
) -> Report:
    """Lint ``model`` for ``ep`` (see :func:`resolve_eps`) and record the report."""
    import onnxlint

    if isinstance(model, Report):
        return record(model)
    return record(onnxlint.lint(model, eps=resolve_eps(ep), config=config))


def assert_deployable(
    model: Any,
    ep: str | Sequence[str] | None = None,
    fail_on: str | Severity = "error",
    confirm: bool = False,
    *,
    config: Config | dict[str, Any] | None = None,
) -> Report:
    """Fail with the rendered findings unless ``model`` is deployable on ``ep``.

    ``ep`` defaults to ``"qnn"`` (or to ``pytest --onnxlint-ep``); a list means
    EPs in priority order. ``fail_on`` is the lowest severity that fails.
    ``config`` is a ``Config`` or a ``[tool.onnxlint]``-shaped mapping; when
    omitted, the configuration is discovered from the model's folder. Returns
    the report when the model passes, so a test can inspect it further. A report
    passed as ``model`` is judged as it is: its EPs were fixed when it was made.
    """
    level = Severity.parse(fail_on) if isinstance(fail_on, str) else fail_on
    eps = resolve_eps(ep)
    report = lint_model(model, eps if not isinstance(model, Report) else None, config)
    problems: list[str] = []
    try:
        report.raise_for_errors(level)
    except LintError as exc:
        problems.append(str(exc))
    if confirm and not report.fatal:
        problems += confirm_on_ep(model, eps[0] if eps else DEFAULT_EP, level)
    if problems:
        where = report.path or "model"
        counts = ", ".join(f"{n} {label}" for label, n in report.counts().items() if n)
        head = (
            f"{where} is not deployable on {' > '.join(report.eps or eps)} "
            f"(fail_on={level.label}{'; ' + counts if counts else ''}):"
        )
        raise LintError("\n".join([head, *problems]))
    return report


def confirm_on_ep(model: Any, ep: str, fail_on: Severity = Severity.ERROR) -> list[str]:
    """Create a real session on ``ep`` in an isolated worker; what went wrong, as lines.

    A failed or crashed session and a session that silently ran on CPU only are
    errors; nodes assigned to CPU are warnings (listed when ``fail_on`` allows).
    """
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec

    # a report from onnxlint.torch.check_export carries its in-memory model
    source = (getattr(model, "model", None) or model.path) if isinstance(model, Report) else model
    if source is None:
        return [f"cannot confirm on {ep}: the report does not carry its model"]
    if isinstance(source, (str, os.PathLike)):
        source = os.fspath(source)
    try:
        spec = EpSpec.for_ep(ep)
    except ValueError as exc:
        return [f"cannot confirm on {ep}: {exc}"]
    result = run_sessions([SessionRequest(model=source, optimization="disabled")], spec)[0]
    lines: list[str] = []
    if not result.ok:
        lines.append(
            f"confirm: session on {spec.provider} failed ({result.status}): "
            f"{result.error or 'no error message'}"
        )
        return lines
    if result.fallback.any:
        lines.append(
            f"confirm: the session did not really use {spec.provider}: "
            f"{result.fallback.message or 'no node was assigned to it'}"
        )
    off = [n for n in result.assignment if n.ep != spec.provider]
    if off and fail_on <= Severity.WARNING:
        names = ", ".join(f"{n.name or '<unnamed>'} ({n.op_type})" for n in off[:10])
        more = f" and {len(off) - 10} more" if len(off) > 10 else ""
        lines.append(
            f"confirm: {len(off)} of {len(result.assignment)} nodes ran on another EP "
            f"than {spec.provider}: {names}{more}"
        )
    return lines

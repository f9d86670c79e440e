"""Assertions for test suites in training repositories.

``assert_deployable(model, ep="qnn")`` lints a model (a path, bytes, an
``onnx.ModelProto``, or a report already made, e.g. by
``onnxlint.torch.check_export``) and raises an ``AssertionError`` whose
message is the rendered findings (where, what, how to fix) when any is at or
above ``fail_on``. It works in any test runner; under pytest the onnxlint
plugin also lists every model checked this way in the session summary.

``confirm=True`` lints with the confirmation stage on (the CLI's
``--confirm``): real ONNX Runtime sessions on each requested EP, in isolated
worker processes, compared with the prediction. A session that fails (OL903)
or that silently runs without the EP (OL904) is an error; a node the EP
refused although the prediction gave it to the EP (OL901) is a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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


def _config_for(model: Any, config: Config | dict[str, Any] | None, confirm: bool) -> Any:
    """The configuration to lint with; ``None`` keeps the engine's own discovery."""
    if not confirm:
        return config
    from onnxlint import config as config_mod

    cfg = config_mod.resolve(config, model)
    # the same switch as the CLI's --confirm
    return cfg.merged(confirm={**(cfg.confirm or {}), "mode": "run"})


def lint_model(
    model: Any,
    ep: str | Sequence[str] | None = None,
    config: Config | dict[str, Any] | None = None,
    confirm: bool = False,
) -> Report:
    """Lint ``model`` for ``ep`` (see :func:`resolve_eps`) and record the report.

    A report is recorded as it is, unless ``confirm`` asks for real sessions:
    then its model (``check_export`` keeps it) or its file is linted again.
    """
    from onnxlint import config as config_mod
    from onnxlint.engine import lint

    if isinstance(model, Report):
        if not confirm:
            return record(model)
        source = getattr(model, "model", None)
        if source is None and model.path and Path(model.path).is_file():
            source = Path(model.path)
        if source is None:
            raise ValueError("cannot confirm a report that carries neither its model nor a file")
        cfg = _config_for(source, config, confirm)
        return record(lint(source, eps=ep or model.eps, config=cfg, path_label=model.path))
    cfg = config_mod.resolve(_config_for(model, config, confirm), model)
    return record(lint(model, eps=resolve_eps(ep), config=cfg))


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
    passed as ``model`` is judged as it is (its EPs were fixed when it was made);
    with ``confirm=True`` its model is linted again with real sessions.
    """
    level = Severity.parse(fail_on) if isinstance(fail_on, str) else fail_on
    eps = resolve_eps(ep)
    given = None if isinstance(model, Report) and ep is None else eps
    report = lint_model(model, given, config, confirm=confirm)
    try:
        report.raise_for_errors(level)
    except LintError as exc:
        where = report.path or "model"
        counts = ", ".join(f"{n} {label}" for label, n in report.counts().items() if n)
        head = (
            f"{where} is not deployable on {' > '.join(report.eps or eps)} "
            f"(fail_on={level.label}{'; ' + counts if counts else ''}):"
        )
        raise LintError(f"{head}\n{exc}") from None
    return report

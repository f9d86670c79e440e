"""onnxlint: will this ONNX graph run where you deploy it, and where will it fall apart?

Python API::

    import onnxlint
    report = onnxlint.lint("model.onnx", eps=["qnn"])
    report.raise_for_errors()
"""

from __future__ import annotations

from onnxlint.version import __version__

# not ``typing.TYPE_CHECKING``: the console script imports this package first, and the
# CLI's replayed output is printed before ``typing`` (about 12 ms on a loaded host)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from onnxlint.config import Config
    from onnxlint.diagnostics import Category, Diagnostic, Fix, Location, Severity
    from onnxlint.report import LintError, Report

__all__ = [
    "Category",
    "Config",
    "Diagnostic",
    "Fix",
    "LintError",
    "Location",
    "Report",
    "Severity",
    "__version__",
    "lint",
    "render",
    "to_sarif",
]


def lint(
    model: Any,
    eps: list[str] | tuple[str, ...] | None = None,
    config: Config | dict[str, Any] | None = None,
    what_if: bool = True,
) -> Report:
    """Lint a model given as a path, bytes or ``onnx.ModelProto``.

    ``config`` may be a ``Config``, a mapping in the ``[tool.onnxlint]`` shape, or
    None to discover ``onnxlint.toml``/``pyproject.toml`` upwards from a model path.
    ``what_if``: predict the outcome of pinning dynamic dims (``Report.causes()``).
    """
    from onnxlint import config as config_mod
    from onnxlint.engine import lint as engine_lint

    return engine_lint(model, eps=eps, config=config_mod.resolve(config, model), what_if=what_if)


def render(reports: Report | Sequence[Report], fmt: str = "table") -> str:
    """``reports`` as ``onnxlint --format FMT`` prints them (table, concise, json, github,
    sarif, html, ...)."""
    from onnxlint.render import render as render_reports

    return render_reports(_as_list(reports), fmt)


def to_sarif(reports: Report | Sequence[Report]) -> dict[str, Any]:
    """The SARIF 2.1.0 log ``onnxlint --format sarif`` writes, as a dict."""
    from onnxlint.render.sarif import to_sarif as sarif

    return sarif(_as_list(reports))


def _as_list(reports: Report | Sequence[Report]) -> list[Report]:
    from onnxlint.report import Report

    return [reports] if isinstance(reports, Report) else list(reports)


def __getattr__(name: str) -> Any:
    if name in ("Category", "Diagnostic", "Fix", "Location", "Severity"):
        from onnxlint import diagnostics

        return getattr(diagnostics, name)
    if name in ("Report", "LintError"):
        from onnxlint import report

        return getattr(report, name)
    if name == "Config":
        from onnxlint.config import Config

        return Config
    raise AttributeError(name)

"""onnxlint: will this ONNX graph run where you deploy it, and where will it fall apart?

Python API::

    import onnxlint
    report = onnxlint.lint("model.onnx", eps=["qnn"])
    report.raise_for_errors()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onnxlint.version import __version__

if TYPE_CHECKING:
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

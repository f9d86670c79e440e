"""Which Python interpreter runs which execution provider, and what each one has.

EP wheels conflict (``onnxruntime``, ``onnxruntime-openvino``, ``onnxruntime-gpu``
all ship the ``onnxruntime`` module), so each EP can be confirmed in its own
environment, configured as ``[tool.onnxlint.runners] openvino = "venv/bin/python"``.
The config loader hands us that table as a ``dict[str, str]``.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint import ep_names
from onnxlint.ep_names import short_name

# Default options and plugin package per ORT provider name; the names users type for an EP
# are the profile index's (onnxlint.ep_names).
DEFAULT_OPTIONS: dict[str, dict[str, str]] = {
    # soc_model is needed: without it the HTP simulator fails to finalize larger
    # float graphs with QNN_COMMON_ERROR_MEM_ALLOC (EP-BEHAVIOUR.md).
    "QNNExecutionProvider": {"backend_type": "htp", "soc_model": "60"},
    "OpenVINOExecutionProvider": {"device_type": "CPU"},
}

PLUGIN_PACKAGES: dict[str, str] = {"QNNExecutionProvider": "onnxruntime_qnn"}

# Where a runner is not configured, a venv with this name in the project root
# (created by .ci/setup-openvino.sh) is used before the current interpreter.
CONVENTIONAL_VENVS: dict[str, str] = {"OpenVINOExecutionProvider": ".venv-openvino"}


def provider_name(ep: str) -> str:
    """``qnn`` -> ``QNNExecutionProvider``; provider names pass through."""
    provider = ep_names.provider_for(ep)
    if provider is None:
        raise ValueError(
            f"unknown execution provider {ep!r}; known: {', '.join(sorted(ep_names.alias_table()))}"
        )
    return provider


@dataclass(frozen=True)
class EpSpec:
    """An EP to create sessions on: provider name, options, optional plugin package."""

    provider: str
    options: dict[str, str] = field(default_factory=dict)
    plugin_package: str | None = None

    @classmethod
    def for_ep(cls, ep: str, options: dict[str, str] | None = None) -> EpSpec:
        prov = provider_name(ep)
        merged = dict(DEFAULT_OPTIONS.get(prov, {}))
        merged.update(ep_names.variant_options(ep))
        merged.update(options or {})
        return cls(prov, merged, PLUGIN_PACKAGES.get(prov))

    @property
    def short(self) -> str:
        return short_name(self.provider)

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "options": dict(self.options),
            "plugin_package": self.plugin_package,
        }


def _runner_keys(provider: str) -> list[str]:
    return [provider, *ep_names.names_for(provider)]


def resolve_runner(
    ep: str,
    runners: dict[str, str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    use_conventional: bool = True,
) -> str:
    """The interpreter that should run sessions for ``ep``.

    Lookup: the configured ``runners`` table (by alias or provider name; a
    ``default`` key applies to every EP), then the conventional venv in
    ``root`` (e.g. ``.venv-openvino``), then ``sys.executable``. Relative paths
    are taken relative to ``root`` (the directory holding pyproject.toml).
    The path is returned even if it does not exist: the client reports a
    missing interpreter as a structured failure.
    """
    prov = provider_name(ep)
    table = {k.lower(): v for k, v in (runners or {}).items()}
    base = Path(root) if root is not None else Path.cwd()
    for key in _runner_keys(prov):
        value = table.get(key.lower())
        if value:
            return _expand(value, base)
    if "default" in table:
        return _expand(table["default"], base)
    if use_conventional and prov in CONVENTIONAL_VENVS:
        candidate = base / CONVENTIONAL_VENVS[prov] / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return sys.executable


def _expand(value: str, base: Path) -> str:
    value = os.path.expandvars(os.path.expanduser(value))
    if os.sep not in value and "/" not in value:
        found = shutil.which(value)
        return found or value
    p = Path(value)
    if not p.is_absolute():
        p = base / p
    return str(p)

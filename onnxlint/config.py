"""Configuration: ``[tool.onnxlint]`` in pyproject.toml or an ``onnxlint.toml``.

Found by walking up from the model's folder; validated against
``rules/schema/config.schema.json`` with errors that name the bad key; CLI
flags override what the file says.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onnxlint.data import load_json
from onnxlint.fsutil import read_small_regular_file
from onnxlint.limits import Limits


def _toml() -> Any:
    """The TOML reader, imported when a configuration file is read (``--isolated`` and a
    folder without one read none)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


class ConfigError(ValueError):
    """The configuration is invalid; the message names the file and the key."""


class UsageError(ValueError):
    """Bad arguments or configuration (exit code 2). ``onnxlint.engine.UsageError`` is this
    class: defined here so that a front end can catch it without importing the engine."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)
    eps: tuple[str, ...] = ()
    ep_profiles: tuple[str, ...] = ()
    fail_on: str = "error"
    target_ort: str | None = None
    format: str = "table"
    assume_dims: dict[str, int] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    per_node_ignores: dict[str, list[str]] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    runners: dict[str, str] = field(default_factory=dict)
    confirm: dict[str, Any] = field(default_factory=dict)
    partition: dict[str, Any] = field(default_factory=dict)
    #: the file this came from (None: defaults only)
    source: Path | None = None

    def merged(self, **overrides: Any) -> Config:
        """A copy with the given fields replaced; ``None`` values are ignored."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def root(self) -> Path | None:
        return self.source.parent if self.source else None


def _schema() -> dict[str, Any]:
    return load_json("schema/config.schema.json")


def validate(raw: dict[str, Any], where: str = "configuration") -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors:
            key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
            lines.append(f"{where}: {key}: {err.message}")
        raise ConfigError("\n".join(lines))


def from_mapping(raw: dict[str, Any], source: Path | None = None) -> Config:
    where = str(source) if source else "configuration"
    validate(raw, where)
    kw: dict[str, Any] = {"source": source}
    for key, value in raw.items():
        attr = key.replace("-", "_")
        if attr == "limits":
            kw["limits"] = Limits.from_mapping({k.replace("-", "_"): v for k, v in value.items()})
        elif isinstance(value, list):
            kw[attr] = tuple(value) if attr not in ("per_file_ignores",) else value
        else:
            kw[attr] = value
    return Config(**kw)


def load_file(path: Path) -> Config:
    tomllib = _toml()
    try:
        data = tomllib.loads(read_small_regular_file(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("onnxlint", {}) if isinstance(tool, dict) else {}
    return from_mapping(data, source=path)


def find_config_file(start: Path) -> Path | None:
    """Walk up from ``start`` to the first onnxlint.toml or pyproject.toml with [tool.onnxlint]
    (or a pyproject.toml that cannot be parsed: whether it configures onnxlint is unknown)."""
    here = start if start.is_dir() else start.parent
    for folder in (here.resolve(), *here.resolve().parents):
        candidate = folder / "onnxlint.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            tomllib = _toml()
            try:
                text = read_small_regular_file(pyproject).decode("utf-8")
                if "onnxlint" in tomllib.loads(text).get("tool", {}):
                    return pyproject
            except OSError:
                continue
            except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                # it may hold [tool.onnxlint]: returned, so that loading it reports the error
                # instead of linting with the defaults as if there were no configuration
                return pyproject
    return None


def discover(start: Path | None) -> Config:
    """The configuration that applies to a model at ``start`` (defaults when none is found)."""
    if start is None:
        return Config()
    found = find_config_file(start)
    return load_file(found) if found else Config()


def resolve(config: Config | dict[str, Any] | None, model: Any = None) -> Config:
    """A ``Config`` from a ``Config``, a mapping in the ``[tool.onnxlint]`` shape, or None
    (discovered upwards from ``model`` when it is a path)."""
    if isinstance(config, dict):
        return from_mapping(config)
    if config is None:
        start = Path(model) if isinstance(model, (str, os.PathLike)) else None
        return discover(start)
    return config

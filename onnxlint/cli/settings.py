"""The configuration of each linted file: its config file (found once per folder) with the
command line's options on top."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from onnxlint.cli.arguments import check_target_ort, csv_values, parse_dims, parse_severity
from onnxlint.filestamp import Stamp, stamp


class ConfigCache:
    """``validate=False`` leaves the checks that need the rules (selectors naming known
    codes) to :meth:`validate`: a run whose reports all come from the report cache
    skips them (an entry exists only for a configuration that passed them) and never
    imports the engine."""

    def __init__(self, args: argparse.Namespace, *, validate: bool = True) -> None:
        from onnxlint import config as cfg

        self.args = args
        self._cfg = cfg
        self._by_file: dict[Path | None, Any] = {}
        self._fixed = None
        self._validate = validate
        self._unchecked: list[Any] = []
        #: each configuration file loaded (absolute) and its stamp before it was read
        self.loaded: list[tuple[str, Stamp]] = []
        if validate:
            self._check_cli()
        if args.isolated:
            self._fixed = cfg.Config()
        elif args.config:
            self._fixed = self._load(Path(args.config))

    def validate(self) -> None:
        """The checks ``validate=False`` deferred (raises ``UsageError``/``ConfigError``)."""
        from onnxlint.engine import check_selectors

        if not self._validate:
            self._validate = True
            self._check_cli()
        unchecked, self._unchecked = self._unchecked, []
        for loaded in unchecked:
            check_selectors(loaded)

    def _load(self, path: Path) -> Any:
        before = stamp(path)
        loaded = self._cfg.load_file(path)
        self.loaded.append((os.path.abspath(path), before))
        self._unchecked.append(loaded)
        if self._validate:
            self.validate()
        return loaded

    def _check_cli(self) -> None:
        """The flags' own values, named by flag, before any file is read or model linted."""
        from onnxlint.engine import check_selector_values

        a = self.args
        for flag, values in (
            ("--select", a.select),
            ("--ignore", a.ignore),
            ("--extend-ignore", a.extend_ignore),
        ):
            check_selector_values(flag, csv_values(values) or ())
        check_selector_values("--severity", parse_severity(a.severity) or {}, exact=True)
        check_target_ort(a.target_ort)

    def for_model(self, path: Path) -> Any:
        base = self._fixed
        if base is None:
            found = self._cfg.find_config_file(path)
            if found not in self._by_file:
                self._by_file[found] = self._load(found) if found else self._cfg.Config()
            base = self._by_file[found]
        return self.apply_cli(base)

    def apply_cli(self, base: Any) -> Any:
        a = self.args
        ignore = csv_values(a.ignore)
        extend = csv_values(a.extend_ignore)
        if extend:
            ignore = (*(ignore if ignore is not None else base.ignore), *extend)
        severity = parse_severity(a.severity)
        dims = parse_dims(getattr(a, "assume_dims", None))
        return base.merged(
            assume_dims={**base.assume_dims, **dims} if dims else None,
            select=csv_values(a.select),
            ignore=ignore,
            severity={**base.severity, **severity} if severity else None,
            eps=tuple(a.eps) if a.eps else None,
            ep_profiles=tuple(a.ep_profiles) if a.ep_profiles else None,
            fail_on=a.fail_on,
            target_ort=a.target_ort,
            format=a.format,
            confirm=confirm_settings(a, base),
        )


def confirm_settings(a: argparse.Namespace, base: Any) -> dict[str, Any] | None:
    """``[tool.onnxlint.confirm]`` plus --confirm/--no-cache/--source (None: unchanged)."""
    extra: dict[str, Any] = {}
    if getattr(a, "confirm", False):
        extra["mode"] = "run"
    if getattr(a, "no_cache", False):
        extra["cache"] = False
    if getattr(a, "source", None):
        extra["source"] = str(Path(a.source).resolve())
    return {**base.confirm, **extra} if extra else None

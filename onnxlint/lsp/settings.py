"""The editor settings of the language server, as a typed dataclass.

Settings arrive from the client as loose JSON (``initializationOptions`` or
``workspace/configuration`` for the section ``onnxlint``). Each bad value is
reported by name and replaced by its default, so a typo never stops linting.
They are applied on top of the ``[tool.onnxlint]`` configuration that applies to
each model (pyproject.toml / onnxlint.toml), like CLI flags are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnxlint.config import Config

SECTION = "onnxlint"


@dataclass(frozen=True)
class Settings:
    #: EPs in priority order; empty: what the configuration file says
    eps: tuple[str, ...] = ()
    #: None (or an empty list from the client): what the configuration file says
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    #: run real ORT sessions in the background after the static results are shown
    confirm: bool = False
    #: how the client starts the server; the server only reports it back
    server_command: tuple[str, ...] = ()
    #: the most milliseconds between the last change and the lint run of a URI: the wait
    #: is proportional to the last lint's time (``service.debounce_wait``), none for a
    #: document that lints in a few milliseconds
    debounce_ms: int = 300
    #: list hints and export-hygiene information in the Problems panel
    show_hints: bool = False
    #: findings of one rule and EP listed as problems before the rest become hints (0: all)
    max_problems_per_rule: int = 5
    problems: tuple[str, ...] = field(default_factory=tuple, compare=False)

    def key(self) -> tuple[Any, ...]:
        """What a cached lint result depends on."""
        return (self.eps, self.select, self.ignore)

    def presentation(self) -> tuple[Any, ...]:
        """What the published diagnostics depend on besides the lint result."""
        return (self.show_hints, self.max_problems_per_rule)

    def apply(self, config: Config, confirm_mode: str = "off") -> Config:
        """The configuration file's values, overridden by the editor's.

        Real ORT sessions only run when the editor asks (``onnxlint.confirm``), so the
        confirmation mode comes from the server, never from the configuration file:
        ``off``, ``cache-only`` (show earlier results, no session) or ``run``.
        """
        return config.merged(
            eps=self.eps or None,
            select=self.select,
            ignore=self.ignore,
            confirm={**(config.confirm or {}), "mode": confirm_mode},
        )


def _str_list(value: Any, name: str, problems: list[str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(
            f"{SECTION}.{name}: expected a list of strings, got {value!r}; using the default"
        )
        return None
    return tuple(v.strip() for v in value if v.strip())


def parse_settings(raw: Any) -> Settings:
    """Build ``Settings`` from client JSON; ``Settings.problems`` lists what was rejected.

    Accepts both ``{"onnxlint": {...}}`` and the section itself.
    """
    problems: list[str] = []
    if raw is None:
        return Settings()
    if not isinstance(raw, dict):
        return Settings(
            problems=(
                f"{SECTION}: expected an object, got {type(raw).__name__}; using the defaults",
            )
        )
    if isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    known = {
        "eps",
        "select",
        "ignore",
        "confirm",
        "serverCommand",
        "debounceMs",
        "trace",
        "showHints",
        "maxProblemsPerRule",
    }
    for key in sorted(set(raw) - known):
        problems.append(f"{SECTION}.{key}: unknown setting (ignored)")
    kw: dict[str, Any] = {}
    eps = _str_list(raw.get("eps"), "eps", problems)
    if eps is not None:
        eps = tuple(e.lower() for e in eps)
        bad = _unknown_eps(eps)
        if bad:
            kept = ", ".join(e for e in eps if e not in bad) or "those of the configuration file"
            problems.append(
                f"{SECTION}.eps: unknown execution provider(s) {', '.join(bad)} ignored; "
                f"checking for {kept}"
            )
            eps = tuple(e for e in eps if e not in bad)
        kw["eps"] = eps
    for name in ("select", "ignore"):
        val = _str_list(raw.get(name), name, problems)
        if val:  # an empty list is how the Settings UI says "not set"
            kw[name] = val
    for name, attr in (("confirm", "confirm"), ("showHints", "show_hints")):
        flag = raw.get(name)
        if flag is None:
            continue
        if isinstance(flag, bool):
            kw[attr] = flag
        else:
            problems.append(
                f"{SECTION}.{name}: expected true or false, got {flag!r}; using the default"
            )
    cap = raw.get("maxProblemsPerRule")
    if cap is not None:
        if isinstance(cap, int) and not isinstance(cap, bool) and 0 <= cap <= 100_000:
            kw["max_problems_per_rule"] = cap
        else:
            problems.append(
                f"{SECTION}.maxProblemsPerRule: expected an integer from 0 to 100000, "
                f"got {cap!r}; using the default"
            )
    cmd = raw.get("serverCommand")
    if cmd not in (None, "", []):
        val = _str_list(cmd if isinstance(cmd, list) else [cmd], "serverCommand", problems)
        if val:
            kw["server_command"] = val
    debounce = raw.get("debounceMs")
    if debounce is not None:
        if isinstance(debounce, int) and not isinstance(debounce, bool) and 0 <= debounce <= 60000:
            kw["debounce_ms"] = debounce
        else:
            problems.append(
                f"{SECTION}.debounceMs: expected an integer from 0 to 60000, got {debounce!r}; "
                "using the default"
            )
    return Settings(**kw, problems=tuple(problems))


def _unknown_eps(eps: tuple[str, ...]) -> list[str]:
    """EP names no shipped profile answers to (empty when profiles cannot be listed)."""
    try:
        from onnxlint import profiles

        bad = []
        for name in eps:
            try:
                profiles.get_profile(name)
            except profiles.ProfileError:
                bad.append(name)
            except Exception:
                return []  # the profile loader itself is broken: let lint report it
        return bad
    except Exception:
        return []

"""``--confirm``'s settings: ``[tool.onnxlint.confirm]`` plus the CLI flags, parsed once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from onnxlint.runtime.processes import DEFAULT_MEMORY_CAP_MB

if TYPE_CHECKING:
    from onnxlint.config import Config


LEVELS = ("disabled", "default")
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ConfirmSettings:
    """How to confirm: from ``[tool.onnxlint.confirm]`` plus the CLI flags.

    ``mode``: ``off``, ``run`` (create sessions, use the cache), ``cache-only``
    (never create a session: show what the cache has, e.g. in the language server).
    """

    mode: str = "off"
    use_cache: bool = True
    cache_dir: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB
    runners: dict[str, str] = field(default_factory=dict)
    root: Path | None = None
    levels: tuple[str, ...] = LEVELS

    @classmethod
    def from_config(cls, config: Config) -> ConfirmSettings:
        c = dict(config.confirm or {})
        cache_dir = c.get("cache-dir")
        path = None
        if cache_dir:
            path = Path(os.path.expanduser(str(cache_dir)))
            if not path.is_absolute() and config.root is not None:
                path = config.root / path
        return cls(
            mode=str(c.get("mode", "off")),
            use_cache=bool(c.get("cache", True)),
            cache_dir=path,
            timeout_s=float(c.get("timeout-s", DEFAULT_TIMEOUT_S)),
            memory_cap_mb=int(c.get("memory-cap-mb", DEFAULT_MEMORY_CAP_MB)),
            runners=dict(config.runners or {}),
            root=config.root,
            levels=tuple(c.get("levels", LEVELS)),
        )

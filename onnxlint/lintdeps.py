"""What one lint depended on besides the model's bytes and its configuration.

A lint's answer is a function of the model file, the configuration and the installed
code, except where the lint looks further: the files beside the model that it stats
(external data, EPContext sidecars) and the answers it gets from the environment (a
worker that timed out, a live compatibility check, a real session). Code that looks
further says so here; a caller that wants to reuse the answer (the CLI's report cache,
:mod:`onnxlint.report_cache`) records one lint with :func:`recording` and reuses it only
while every file it looked at is unchanged and nothing it used was volatile.

Nothing here imports onnx: the report cache's hit path runs without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from onnxlint.filestamp import Stamp as Stamp
from onnxlint.filestamp import stamp as stamp


@dataclass
class Dependencies:
    """What :func:`recording` saw: files looked at (path -> stamp when first seen) and why
    the answer may differ next time (empty: it will not)."""

    files: dict[str, Stamp] = field(default_factory=dict)
    volatile: list[str] = field(default_factory=list)

    def unchanged(self) -> bool:
        """Whether every recorded file still has the stamp it had."""
        return all(stamp(path) == seen for path, seen in self.files.items())


_CURRENT: contextvars.ContextVar[Dependencies | None] = contextvars.ContextVar(
    "onnxlint_lintdeps", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[Dependencies]:
    """Record what the code run inside the block depends on (this thread's context)."""
    deps = Dependencies()
    token = _CURRENT.set(deps)
    try:
        yield deps
    finally:
        _CURRENT.reset(token)


def looked_at(path: str | os.PathLike[str]) -> None:
    """The running lint stat'ed or read ``path`` (a file other than the model itself)."""
    deps = _CURRENT.get()
    if deps is not None:
        key = os.path.abspath(os.fspath(path))
        if key not in deps.files:
            deps.files[key] = stamp(key)


def volatile(why: str) -> None:
    """The running lint used an answer that may differ next time (``why`` says which)."""
    deps = _CURRENT.get()
    if deps is not None and why not in deps.volatile:
        deps.volatile.append(why)

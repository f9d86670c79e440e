"""Progress notes from long work (real sessions, exports) to whichever front end listens.

The engine and the analyses call :func:`note`; nothing is shown unless a front end set a
listener (the CLI prints to stderr, the API and the language server stay silent). A note
is one short line; the listener decides where it goes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

Listener = Callable[[str], None]

_local = threading.local()
_default: Listener | None = None


def set_listener(listener: Listener | None) -> None:
    """The process-wide listener (None: silence)."""
    global _default
    _default = listener


@contextlib.contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """``listener`` for the work done in this block on this thread."""
    before = getattr(_local, "listener", None)
    _local.listener = listener
    try:
        yield
    finally:
        _local.listener = before


def note(message: str) -> None:
    """Tell the listener, if any; a failing listener never breaks the work."""
    listener = getattr(_local, "listener", None) or _default
    if listener is None:
        return
    with contextlib.suppress(Exception):  # a progress line is never worth a failed lint
        listener(message)

"""Handing memory a lint has freed back to the operating system.

ONNX's shape inference works in C++ on its own parse of the model and answers with a
serialised copy that protobuf parses again; those buffers and parsed copies come from the
C allocator. Once freed, glibc keeps them for its own later ``malloc`` calls, which
Python's small objects never make (they live in separately mapped arenas): the resident
size of a lint kept every inference pass it had let go (measured on a 100k-node graph:
the two passes' answers freed, 365 MB resident; after ``malloc_trim``, 95 MB).
:func:`release_freed` asks glibc for that trim; elsewhere (musl, macOS, Windows) it does
nothing.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

#: a model with at least this many nodes is large enough for its inference passes to leave
#: megabytes behind (below it the trim is not worth the ``ctypes`` import)
TRIM_MIN_NODES = 5_000


@cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim  # the process's own C library
    except (OSError, AttributeError):
        return None


def release_freed() -> bool:
    """Give the free pages the C allocator holds back to the operating system (what the
    process freed stays freed; nothing live moves); whether the C library could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True

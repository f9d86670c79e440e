"""Stamps and digests of files, as the caches compare them.

A stamp is what ``os.stat`` says of a path (kind, device, inode, size, mtime, ctime):
any write, rename over or ``touch`` changes it (the kernel sets ctime). A digest is the
SHA-256 of a regular file's bytes, read without blocking on a FIFO or device.

Only ``os``, ``stat`` and ``sys`` at import: the CLI's replayed output checks the files
it depends on before anything else is imported (:mod:`onnxlint.cli.replay`).
"""

from __future__ import annotations

import os
import stat as stat_module
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: ``os.stat`` of a path, as compared on reuse: kind, device, inode, size, mtime and
#: ctime (nanoseconds); ``None`` for a path that does not exist or cannot be stat'ed
Stamp = tuple[int, int, int, int, int, int] | None

#: above this many bytes a digest is computed by OpenSSL (``hashlib``, whose import
#: costs a few ms); below it the interpreter's own SHA-256 (about 4 ms per MB) is faster
_LARGE = 1 << 20


def stamp_of(st: os.stat_result) -> tuple[int, int, int, int, int, int]:
    return (stat_module.S_IFMT(st.st_mode), st.st_dev, st.st_ino, st.st_size,
            st.st_mtime_ns, st.st_ctime_ns)  # fmt: skip


def stamp(path: str | os.PathLike[str]) -> Stamp:
    """What ``os.stat`` (following links) says of ``path`` now; None when it cannot."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stamp_of(st)


def sha256(data: bytes = b"", size_hint: int = 0) -> Any:
    """A SHA-256 hasher (``update``, ``hexdigest``); ``size_hint``: how many bytes it will
    be given, which decides whether importing ``hashlib`` pays."""
    if size_hint <= _LARGE and "hashlib" not in sys.modules:
        builtin = _builtin_sha256()
        if builtin is not None:
            return builtin(data)
    import hashlib

    return hashlib.sha256(data)


def _builtin_sha256() -> Any:
    """The interpreter's own SHA-256 constructor (None: this build has none)."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256 as builtin  # type: ignore[import-not-found,unused-ignore]
        else:
            from _sha256 import sha256 as builtin  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        return None
    return builtin


def regular_file_digest(
    path: str | os.PathLike[str], max_bytes: int
) -> tuple[str, int, tuple[int, int, int, int, int, int]] | None:
    """SHA-256, size and stamp of the regular file at ``path`` (links followed, opened
    without blocking, read in chunks); None for anything else, a file over
    ``max_bytes``, or a read error. The stamp is taken after the read, on the open file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        h = sha256(size_hint=st.st_size)
        size = 0
        while chunk := os.read(fd, 1 << 22):
            h.update(chunk)
            size += len(chunk)
            if size > max_bytes:
                return None
        after = os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest(), size, stamp_of(after)

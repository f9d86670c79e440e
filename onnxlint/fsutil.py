"""Atomic writes: temp file in the same folder, fsync, rename. An interrupted run
leaves the original untouched."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path


def _target_mode(path: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual 0666 & ~umask
    (mkstemp would leave it owner-only)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_error(path: str | os.PathLike[str], exc: OSError) -> str:
    """One line for a failed write: the path the user named and the system's reason."""
    reason = " ".join((exc.strerror or str(exc) or type(exc).__name__).split())
    return f"cannot write {os.fspath(path)}: {reason}"


def check_writable(path: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise the OSError a write of ``path`` would meet, before a long computation whose
    result would be lost: a missing or read-only folder, a folder or another non-regular
    file in the file's place. Also refused, because the atomic writer would replace them
    and the user cannot have meant that: a symbolic link (its target would stay as it was
    and the link would become a file) and any of ``inputs``, the files this run reads
    (a hard link to one included).

    Creates and removes a uniquely named temp file beside ``path``; ``path`` itself is
    not touched.
    """
    path = Path(path)
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            to_input = _is_one_of(path, inputs, follow=True)
            raise OSError(
                errno.EINVAL,
                "it is a symbolic link"
                + (" to an input of this run" if to_input else "")
                + "; name the file itself",
                str(path),
            )
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file", str(path))
        if _is_one_of(path, inputs, follow=False):
            raise OSError(errno.EINVAL, "it is an input of this run", str(path))
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    os.unlink(tmp)


def _is_one_of(path: Path, inputs: Iterable[Path], follow: bool) -> bool:
    """Whether ``path`` (its target, with ``follow``) is the same file as one of ``inputs``."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return False
    for other in inputs:
        try:
            ost = os.stat(other)
        except OSError:
            continue
        if (ost.st_dev, ost.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


#: configuration files are small; anything larger is refused rather than read
MAX_SMALL_FILE_BYTES = 4 << 20


def read_small_regular_file(path: Path, max_bytes: int = MAX_SMALL_FILE_BYTES) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``max_bytes``.

    Opened with ``O_NONBLOCK`` so a FIFO in its place cannot block the open, then
    ``fstat`` on the descriptor decides: a FIFO, device or folder raises ``OSError``
    instead of being read (``/dev/zero`` would never end).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size > max_bytes:
            raise OSError(f"{path} is larger than {max_bytes} bytes")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:  # it grew after the fstat
            raise OSError(f"{path} is larger than {max_bytes} bytes")
        return data
    finally:
        os.close(fd)

"""The file side of onnxlint's on-disk caches (level-1 graphs, ``--confirm`` results).

One place decides where caches live, how an entry is read and how a folder is pruned:

- **Where.** ``$ONNXLINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/onnxlint``, else
  ``~/.cache/onnxlint``; each cache is a subfolder (``confirm``, ``level1``,
  ``rule-docs``). Folders onnxlint creates are private (mode 0700).
- **Reading an entry.** Opened without following a link and without blocking
  (``O_NOFOLLOW | O_NONBLOCK``), then ``fstat`` on the descriptor: only a regular file
  owned by this user and no larger than the caller's bound is read. A FIFO, a device,
  a symlink or another user's file is an unusable entry (the caller discards it and
  recomputes), never a hang and never trusted.
- **Pruning.** The most recently used entries are kept, up to a count and a byte total.

Reading needs only ``os`` and ``stat``: the CLI's replayed output is read before anything
else is imported (:mod:`onnxlint.cli.replay`).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

#: the environment variable that moves every cache
CACHE_DIR_ENV = "ONNXLINT_CACHE_DIR"


def cache_folder() -> str:
    """The folder holding every onnxlint cache, as text (not created here)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "onnxlint")


def cache_root() -> Path:
    """The folder holding every onnxlint cache (not created here)."""
    from pathlib import Path

    return Path(cache_folder())


def keyed_file(folder: str, key: object) -> Path:
    """``<cache root>/<folder>/<name>.json``, the name a digest of ``key`` (JSON with
    sorted keys): one file per answer of an installed build (its schema and identity in
    ``key``), found again by the next process that asks the same thing."""
    import hashlib
    import json

    blob = json.dumps(key, sort_keys=True).encode("utf-8")
    return cache_root() / folder / (hashlib.sha256(blob).hexdigest()[:32] + ".json")


def make_private_dir(folder: Path) -> None:
    """Create ``folder`` (and missing parents) readable and writable by this user only."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)


class UnusableEntry(Exception):
    """A cache entry that exists but must not be read (the message says why)."""


def read_entry(path: str | os.PathLike[str], max_bytes: int) -> bytes | None:
    """The bytes of the cache entry at ``path``; None when there is none.

    Raises :class:`UnusableEntry` for anything but a regular file of this user of at
    most ``max_bytes`` bytes, and for a read error.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnusableEntry("a symlink, not a regular file") from exc
        raise UnusableEntry(f"unreadable ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnusableEntry("not a regular file (FIFO, device or folder)")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise UnusableEntry("owned by another user")
        if st.st_size > max_bytes:
            raise UnusableEntry(f"{st.st_size} bytes, more than any entry holds")
        chunks: list[bytes] = []
        left = st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UnusableEntry(f"unreadable ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def discard(path: str | os.PathLike[str]) -> None:
    """Remove an entry (the link itself when it is one); never raises."""
    try:  # noqa: SIM105 (contextlib costs a replayed output 3 ms of imports)
        os.unlink(path)
    except OSError:
        pass


def touch(path: str | os.PathLike[str]) -> None:
    """Mark an entry used, so pruning keeps it; never follows a link, never raises."""
    try:  # noqa: SIM105 (as above)
        os.utime(path, follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass


def prune(folder: Path, patterns: Sequence[str], max_entries: int, max_bytes: int) -> None:
    """Per pattern, keep the newest ``max_entries`` entries within ``max_bytes``."""
    for pattern in patterns:
        entries = []
        for f in folder.glob(pattern):
            try:
                st = f.lstat()
            except OSError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, f))
        entries.sort(reverse=True)
        total = 0
        for i, (_, size, f) in enumerate(entries):
            total += size
            if i >= max_entries or total > max_bytes:
                discard(f)


def read_or_discard(
    path: str | os.PathLike[str], max_bytes: int
) -> tuple[bytes | None, str | None]:
    """An entry's bytes, or ``(None, why)``: an unusable entry (a link, a FIFO, another
    user's, too large) is removed and its reason returned; a missing one gives ``(None, None)``."""
    try:
        return read_entry(path, max_bytes), None
    except UnusableEntry as exc:
        discard(path)
        return None, str(exc)


def split_entry(raw: bytes, schema: str, key: object) -> tuple[dict[str, object], bytes]:
    """The header and payload of an entry written as a JSON header line (with ``schema``,
    ``key`` and ``payload_sha256``) followed by the payload; raises ValueError when the
    entry is not one of ``schema``, answers another key, or its payload does not match."""
    import hashlib
    import json

    head, sep, payload = raw.partition(b"\n")
    if not sep:
        raise ValueError("no header")
    entry = json.loads(head)
    if not isinstance(entry, dict) or entry.get("schema") != schema:
        raise ValueError("wrong schema")
    if entry.get("key") != json.loads(json.dumps(key)):
        raise ValueError("key material does not match")
    if entry.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
        raise ValueError("checksum mismatch")
    return entry, payload

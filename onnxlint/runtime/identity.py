"""What ORT answers depend on, without importing it: the installed package's identity
(version, location, native libraries) and whether on-disk caches of its answers are on.
Shared by the level-1 graph cache and the ORT limits (``ort_versions``).

Only ``os`` and ``sys`` at import: the CLI's replayed output keys on the ORT build
before anything else is imported (:mod:`onnxlint.cli.replay`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from onnxlint.config import Config

#: set (not ``0``/empty) to turn every cache off
NO_CACHE_ENV = "ONNXLINT_NO_CACHE"
#: the version of the protocol spoken with ``_worker.py`` (part of what a cached answer
#: depends on; here so that a cache key needs none of the modules that run workers)
PROTOCOL = 1


def cache_enabled(config: Config | None = None) -> bool:
    """False with ``ONNXLINT_NO_CACHE`` set (not ``0``/empty) or ``--no-cache`` / ``cache = false``."""
    env = os.environ.get(NO_CACHE_ENV, "").strip().lower()
    if env not in ("", "0", "false", "no", "off"):
        return False
    return config is None or (config.confirm or {}).get("cache", True) is not False


def _version_in(text: str) -> str | None:
    """The value of the first line ``__version__ = "X"`` in ``text`` (what the regular
    expression ``^__version__\\s*=\\s*["']([^"']+)["']``, multi-line, finds)."""
    end = len(text)
    start = 0
    while True:
        i = text.find("__version__", start)
        if i < 0:
            return None
        start = i + 1
        if i and text[i - 1] != "\n":
            continue
        j = i + len("__version__")
        while j < end and text[j].isspace():
            j += 1
        if j >= end or text[j] != "=":
            continue
        j += 1
        while j < end and text[j].isspace():
            j += 1
        if j >= end or text[j] not in "\"'":
            continue
        k = j + 1
        while k < end and text[k] not in "\"'":
            k += 1
        if k < end and k > j + 1:
            return text[j + 1 : k]


def _is_library(name: str) -> bool:
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""
    return suffix in (".so", ".pyd", ".dll", ".dylib") or ".so." in name


_UNSET = object()
_IDENTITY: Any = _UNSET


def ort_identity() -> dict[str, Any] | None:
    """The ORT package the worker will import, without importing it (None: not installed).

    The worker runs this interpreter with ``-I``, so the working folder is left out
    of the search path here too. Version, location and the size and mtime of every
    native library: a reinstalled or rebuilt ORT gets new cache keys. Computed once
    per process.
    """
    global _IDENTITY
    if _IDENTITY is _UNSET:
        _IDENTITY = _ort_identity()
    found: dict[str, Any] | None = _IDENTITY
    return found


def _ort_identity() -> dict[str, Any] | None:
    from importlib.machinery import PathFinder

    cwd = os.getcwd()
    path = [p for p in sys.path if p and os.path.abspath(p) != cwd]
    try:
        spec = PathFinder.find_spec("onnxruntime", path)
    except (ImportError, OSError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    pkg = os.fspath(next(iter(spec.submodule_search_locations)))
    try:
        with open(os.path.join(pkg, "__init__.py"), encoding="utf-8", errors="replace") as fh:
            head = fh.read()
        libs = []
        for folder in (os.path.join(pkg, "capi"), pkg):
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                if _is_library(name):
                    st = os.stat(os.path.join(folder, name))
                    libs.append([name, st.st_size, st.st_mtime_ns])
    except OSError:
        return None
    return {"package": pkg, "version": _version_in(head), "libs": libs}

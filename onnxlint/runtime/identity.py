"""What ORT answers depend on, without importing it: the installed package's identity
(version, location, native libraries) and whether on-disk caches of its answers are on.
Shared by the level-1 graph cache and the ORT limits (``ort_versions``)."""

from __future__ import annotations

import functools
import importlib.machinery
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


_VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.M)


@functools.cache
def ort_identity() -> dict[str, Any] | None:
    """The ORT package the worker will import, without importing it (None: not installed).

    The worker runs this interpreter with ``-I``, so the working folder is left out
    of the search path here too. Version, location and the size and mtime of every
    native library: a reinstalled or rebuilt ORT gets new cache keys.
    """
    cwd = os.getcwd()
    path = [p for p in sys.path if p and os.path.abspath(p) != cwd]
    try:
        spec = importlib.machinery.PathFinder.find_spec("onnxruntime", path)
    except (ImportError, OSError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    pkg = Path(next(iter(spec.submodule_search_locations)))
    try:
        head = (pkg / "__init__.py").read_text("utf-8", "replace")
        found = _VERSION_RE.search(head)
        libs = []
        for folder in (pkg / "capi", pkg):
            if not folder.is_dir():
                continue
            for f in sorted(folder.iterdir()):
                if f.suffix in (".so", ".pyd", ".dll", ".dylib") or ".so." in f.name:
                    st = f.stat()
                    libs.append([f.name, st.st_size, st.st_mtime_ns])
    except OSError:
        return None
    return {"package": str(pkg), "version": found.group(1) if found else None, "libs": libs}

"""Installed distributions' versions, read from the ``NAME-VERSION.dist-info`` folder
names on ``sys.path`` without importing ``importlib.metadata``.

Importing ``importlib.metadata`` (and the email, zipfile and csv modules it pulls in)
costs about 30 ms, more than a lint whose report is cached takes; one folder listing
per path entry costs a fraction of that. A distribution installed some other way (an
``.egg-info`` folder) is not seen here: :func:`version` then asks ``importlib.metadata``.

Only ``os`` and ``sys`` at import: the CLI's replayed output keys on these versions
before anything else is imported (:mod:`onnxlint.cli.replay`).
"""

from __future__ import annotations

import os
import sys

_SUFFIX = ".dist-info"


def normalized(name: str) -> str:
    """A distribution name in the form packaging compares (``onnxruntime_qnn``): runs of
    ``-``, ``_`` and ``.`` become one ``_``, in lower case."""
    out = name.replace("-", "_").replace(".", "_")
    while "__" in out:
        out = out.replace("__", "_")
    return out.lower()


def installed_versions() -> dict[str, str]:
    """Normalized distribution name -> version; the first path entry that has a
    distribution wins, as for imports. Not cached: the report cache wants the state now."""
    out: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except (OSError, ValueError):
            continue
        for name in names:
            if not name.endswith(_SUFFIX) or "\n" in name:
                continue
            # NAME-VERSION: the version is after the last '-' (it never holds one)
            dist, _, found = name[: -len(_SUFFIX)].rpartition("-")
            if dist and found:
                out.setdefault(normalized(dist), found)
    return out


_VERSIONS: dict[str, str] | None = None


def _versions_once() -> dict[str, str]:
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = installed_versions()
    return _VERSIONS


def version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed)."""
    found = _versions_once().get(normalized(name))
    if found is not None:
        return found
    from importlib import metadata  # only for what the listing cannot see

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

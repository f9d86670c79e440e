"""Installed distributions' versions, read from the ``NAME-VERSION.dist-info`` folder
names on ``sys.path`` without importing ``importlib.metadata``.

Importing ``importlib.metadata`` (and the email, zipfile and csv modules it pulls in)
costs about 30 ms, more than a lint whose report is cached takes; one folder listing
per path entry costs a fraction of that. A distribution installed some other way (an
``.egg-info`` folder) is not seen here: :func:`version` then asks ``importlib.metadata``.
"""

from __future__ import annotations

import functools
import os
import re
import sys

_DIST_INFO = re.compile(r"^(.+?)-([^-]+)\.dist-info$")


def normalized(name: str) -> str:
    """A distribution name in the form packaging compares (``onnxruntime_qnn``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


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
            found = _DIST_INFO.match(name)
            if found:
                out.setdefault(normalized(found.group(1)), found.group(2))
    return out


@functools.cache
def _versions_once() -> dict[str, str]:
    return installed_versions()


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

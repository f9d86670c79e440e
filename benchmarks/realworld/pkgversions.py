"""The versions of the packages a corpus build used, for the manifest.

Standard library only: the build scripts that run in venvs of their own (Optimum,
TensorFlow, diffusers) import it as well as ``build.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import metadata


def package_versions(packages: Iterable[str]) -> dict[str, str]:
    """Python's version and each package's installed version ("missing" when it is not)."""
    out = {"python": sys.version.split()[0]}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "missing"
    return out

"""The installed onnxlint and the environment it runs in, as parts of cache keys.

A cached answer of the CLI (a report, :mod:`onnxlint.report_cache`; a whole command's
output, :mod:`onnxlint.cli.replay`) holds only while the code that made it and the
packages its answers come from are the ones installed now:

- :func:`code_identity`: every file of the installed onnxlint and of its data folder
  (path, size, mtime): an edited rule or profile gets new keys, released or not;
- :func:`environment_identity`: the interpreter, ONNX Runtime's build and the versions
  of :data:`PACKAGES`.

Only ``os`` and ``sys`` at import, and no ``hashlib``: the replayed output is looked
up with these before anything else is imported, and on this path every imported
module counts (``re``, ``functools`` or ``pathlib`` cost 4-13 ms each on a loaded
2-core host, against a hit that takes about 25 ms in all).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the packages whose versions a report's answers depend on, besides ONNX Runtime's build
PACKAGES = (
    "onnx",
    "numpy",
    "protobuf",
    "sympy",
    "ml_dtypes",
    "onnxruntime-qnn",
    "onnxruntime-openvino",
    "onnxscript",
)

_CODE: str | None = None


def code_identity(*, fresh: bool = False) -> str:
    """A digest of the installed onnxlint (every file's path, size and mtime) and of its
    data folder, computed once per process (``fresh``: again, not remembered)."""
    global _CODE
    if _CODE is not None and not fresh:
        return _CODE
    from onnxlint.data import data_folder
    from onnxlint.filestamp import sha256

    lines: list[str] = []
    for root in (os.path.dirname(os.path.realpath(__file__)), data_folder()):
        _walk(root, "", lines)
    digest: str = sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
    if not fresh:
        _CODE = digest
    return digest


def _walk(folder: str, rel: str, lines: list[str]) -> None:
    """``rel/name\\0size\\0mtime`` of every file under ``folder``, in sorted order, each
    folder's files before its subfolders (``os.walk``'s order); ``__pycache__`` and
    compiled files left out (Python rewrites them; their sources are what counts)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    subfolders = []
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)  # a link is a file here: no loops
        except OSError:
            continue
        if is_dir:
            if entry.name != "__pycache__":
                subfolders.append(entry)
            continue
        if entry.name.endswith((".pyc", ".pyo")):
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        lines.append(f"{rel}{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n")
    for entry in subfolders:
        _walk(entry.path, f"{rel}{entry.name}/", lines)


_ENV: dict[str, Any] | None = None


def environment_identity() -> dict[str, Any]:
    """The interpreter, ONNX Runtime's build and the versions of :data:`PACKAGES`
    (computed once per process)."""
    global _ENV
    if _ENV is None:
        from onnxlint.distinfo import installed_versions, normalized
        from onnxlint.runtime.identity import ort_identity

        found = installed_versions()
        _ENV = {
            "python": sys.version,
            "executable": sys.executable,
            "ort": ort_identity(),
            "packages": {name: found.get(normalized(name)) for name in PACKAGES},
        }
    return _ENV

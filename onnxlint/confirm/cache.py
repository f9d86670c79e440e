"""``--confirm``'s on-disk cache of session results.

Keyed by everything that decides a result: the model's content hash, the EP and its
options, the runner interpreter and its ORT/EP packages down to each native library,
the levels, free dimensions and limits. An entry is checksummed; a truncated or corrupt
one is discarded, never trusted, and the folder is pruned to its bounds on each write.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnxlint.confirm.serialize import result_from_json, result_to_json
from onnxlint.runtime.results import (
    STATUS_CRASH,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_OOM,
    STATUS_TIMEOUT,
    SessionResult,
)

CACHE_SCHEMA = "onnxlint-confirm-cache/3"
#: the confirm cache keeps the most recently used entries within these bounds
CACHE_MAX_ENTRIES = 512
CACHE_MAX_BYTES = 64 * 2**20
#: results that say something about the model (a timeout under the same limit, which is
#: part of the key, included: a QNN session that takes minutes should not cost minutes at
#: every re-run); a runner that could not start says nothing about it
CACHEABLE = (STATUS_OK, STATUS_ERROR, STATUS_TIMEOUT, STATUS_CRASH, STATUS_OOM)
_RUNNER_DISTS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
    "onnxruntime-ep-openvino",
)


def default_cache_dir() -> Path:
    from onnxlint.cachefs import cache_root

    return cache_root() / "confirm"


#: run under the runner interpreter: who it is and what its ORT and EP packages are,
#: down to each native library (RECORD hash and size, and the installed file's size and
#: mtime), without importing onnxruntime
_RUNNER_IDENTITY = """
import json, os, sys
from importlib.metadata import distribution, PackageNotFoundError
out = {"python": sys.version.split()[0], "executable": os.path.realpath(sys.executable),
       "prefix": os.path.realpath(sys.prefix), "libs": {}}
for d in DISTS:
    try:
        dist = distribution(d)
    except PackageNotFoundError:
        continue
    out[d] = dist.version
    libs = []
    for f in dist.files or ():
        name = f.name
        if not (name.endswith((".so", ".pyd", ".dll", ".dylib")) or ".so." in name):
            continue
        try:
            st = os.stat(f.locate())
            here = [st.st_size, st.st_mtime_ns]
        except OSError:
            here = None
        libs.append([str(f), f.size, f.hash.value if f.hash else None, here])
    out["libs"][d] = sorted(libs, key=lambda lib: lib[0])
print(json.dumps(out))
"""


def _runner_versions_uncached(runner: str) -> dict[str, Any] | None:
    script = f"DISTS = {list(_RUNNER_DISTS)!r}\n" + _RUNNER_IDENTITY
    try:
        proc = subprocess.run(
            [runner, "-I", "-c", script], capture_output=True, text=True, timeout=30, check=False
        )
        value = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return value if isinstance(value, dict) else None


_VERSIONS: dict[str, dict[str, Any] | None] = {}


def runner_versions(runner: str) -> dict[str, Any] | None:
    """The runner's identity for cache keys: its interpreter (resolved path, prefix,
    Python version) and its ORT/EP packages (versions and native libraries), without
    importing onnxruntime. Two environments with the same versions differ in it."""
    if runner not in _VERSIONS:
        _VERSIONS[runner] = _runner_versions_uncached(runner)
    return _VERSIONS[runner]


def cache_key(material: dict[str, Any]) -> str:
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _checksum(results: list[dict[str, Any]]) -> str:
    blob = json.dumps(results, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class CacheLookup:
    results: list[SessionResult] | None
    discarded: str | None = None  # why an entry was thrown away


class ResultCache:
    """Session results on disk, one JSON file per key; written atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str, material: dict[str, Any]) -> CacheLookup:
        from onnxlint import cachefs

        path = self.path(key)
        # never follows a link or blocks on a FIFO; another user's entry is not read
        raw, unusable = cachefs.read_or_discard(path, CACHE_MAX_BYTES)
        if raw is None:
            return CacheLookup(None, unusable) if unusable else CacheLookup(None)
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("schema") != CACHE_SCHEMA:
                raise ValueError("wrong schema")
            if entry.get("key") != material:
                raise ValueError("key material does not match")
            results = entry["results"]
            if not isinstance(results, list) or entry.get("checksum") != _checksum(results):
                raise ValueError("checksum mismatch")
            return CacheLookup([result_from_json(r) for r in results])
        except (ValueError, KeyError, TypeError) as exc:
            why = str(exc) if not isinstance(exc, json.JSONDecodeError) else "not valid JSON"
            cachefs.discard(path)
            return CacheLookup(None, why or type(exc).__name__)

    def put(self, key: str, material: dict[str, Any], results: list[SessionResult]) -> None:
        from onnxlint.cachefs import make_private_dir, prune
        from onnxlint.fsutil import atomic_write_text

        data = [result_to_json(r) for r in results]
        entry = {
            "schema": CACHE_SCHEMA,
            "key": material,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results": data,
            "checksum": _checksum(data),
        }
        try:
            make_private_dir(self.folder)
            atomic_write_text(self.path(key), json.dumps(entry, sort_keys=True))
            prune(self.folder, ("*.json",), CACHE_MAX_ENTRIES, CACHE_MAX_BYTES)
        except OSError:
            pass  # a cache that cannot be written only costs time

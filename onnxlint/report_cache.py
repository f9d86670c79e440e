"""Whole reports, kept per model file and configuration (``reports/`` in the cache folder).

The CLI lints a file that has not changed since the same command linted it by reading
the report back: no onnx import, no model parse, no rule runs. What a report depends
on is in its key or in its entry, and an entry is used only while all of it holds:

- **key**: the model file's SHA-256 and size, the path it was named by (reports quote
  it), the resolved configuration (every field, the content of ``ep_profiles`` files),
  the installed onnxlint code (each file's path, size and mtime), the Python and the
  packages the lint's answers come from (onnx, ONNX Runtime's build, sympy, numpy,
  protobuf, the EP plugins).
- **entry**: the stamp (``os.stat``: inode, size, mtime, ctime) of every other file the
  lint looked at (external data, EPContext sidecars: :mod:`onnxlint.lintdeps`), checked
  again on every read.
- **never stored**: a report that used an answer of the environment that may differ
  next time (real sessions, a live compatibility check, a worker that failed, a rule
  that crashed), and, with ``--html``, anything (its pages need the graphs, which entries
  do not keep).

An entry is a JSON header line (schema, key, payload checksum, file stamps) and a
pickle of the report without its graphs, read through an unpickler that builds only
the report's own data classes: an entry that asks for anything else, or is not a
regular file of this user, is discarded and the model linted again (SECURITY.md,
item 8). ``ONNXLINT_NO_CACHE`` or ``--no-cache`` turn it off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.filestamp import Stamp, regular_file_digest, stamp
from onnxlint.installed import PACKAGES as PACKAGES
from onnxlint.installed import code_identity as code_identity
from onnxlint.installed import environment_identity as environment_identity
from onnxlint.lintdeps import Dependencies

if TYPE_CHECKING:
    from onnxlint.config import Config
    from onnxlint.report import Report

SCHEMA = "onnxlint-report-1"
FOLDER = "reports"
#: entries kept (most recently used first) and their total size
MAX_ENTRIES = 2000
MAX_BYTES = 256 * 2**20
#: a report larger than this pickled is not kept (a 100k-node model's is a few MB)
MAX_ENTRY_BYTES = 32 * 2**20
#: the configuration fields the engine never reads (how a front end shows a report)
FRONT_END_ONLY = frozenset({"format", "fail_on"})


# ---------------------------------------------------------------------------
# The key


def _plain(value: Any) -> Any:
    """``value`` as JSON data (a Path as its text, a tuple or set as a list)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def config_material(config: Config) -> dict[str, Any] | None:
    """Every field of ``config``, with the content of its ``ep_profiles`` files (None: one
    cannot be read, and the lint will say why). The fields only front ends read (the
    output format, the exit threshold) are left out: one entry serves every format."""
    out = {k: v for k, v in _plain(config).items() if k not in FRONT_END_ONLY}
    profiles = []
    for extra in config.ep_profiles:
        path = Path(extra)
        if config.root is not None and not path.is_absolute():
            path = config.root / path
        digest = regular_file_digest(path, 16 * 2**20)
        if digest is None:
            return None
        profiles.append([str(path), digest[0]])
    out["ep_profile_files"] = profiles
    return out


# ---------------------------------------------------------------------------
# Entries


@dataclass
class Slot:
    """Where the report of one model file and configuration is kept: ``get`` it, or
    ``put`` the one a lint made (with what :func:`onnxlint.lintdeps.recording` saw)."""

    path: Path
    key: dict[str, Any]
    #: the model file's stamp when it was hashed: a report is stored only if the file
    #: still has it after the lint (it was not rewritten meanwhile)
    model_stamp: Stamp
    #: once the report was read back or kept: the stamps of the other files it depends
    #: on (what the CLI's replayed output checks, :mod:`onnxlint.cli.replay`)
    kept: dict[str, Stamp] | None = None

    def get(self) -> Report | None:
        """The stored report; None when there is none to trust (a bad entry is removed)."""
        from onnxlint import cachefs

        raw, _ = cachefs.read_or_discard(self.path, MAX_ENTRY_BYTES + (1 << 20))
        if raw is None:
            return None
        try:
            entry, payload = cachefs.split_entry(raw, SCHEMA, self.key)
            files = entry["files"]
            if not isinstance(files, dict):
                raise ValueError("bad file list")
            deps = Dependencies(files={str(k): _stamp_of(v) for k, v in files.items()})
            if not deps.unchanged():
                raise ValueError("a file the lint looked at changed")
            report = _Reader(io.BytesIO(payload)).load()
            from onnxlint.report import Report

            if not isinstance(report, Report):
                raise ValueError("not a report")
        except Exception:  # any malformed or outdated entry is discarded, never trusted
            cachefs.discard(self.path)
            return None
        cachefs.touch(self.path)  # pruning keeps the most recently used entries
        self.kept = dict(deps.files)
        return report

    def put(self, report: Report, deps: Dependencies) -> bool:
        """Keep ``report``; False when it must not be kept (volatile, the model file
        changed during the lint, too large) or cannot be (unwritable cache)."""
        from onnxlint import cachefs
        from onnxlint.fsutil import atomic_write_bytes

        if deps.volatile or stamp(self.key["file"]["real"]) != self.model_stamp:
            return False
        try:
            cachefs.make_private_dir(self.path.parent)  # before pickling: it may not be
        except OSError:
            return False
        try:
            # not read back here (that doubled a store's cost): the reader refuses what
            # is not a report's (tests/test_report_cache.py checks that reports of real
            # models, every EP, round-trip)
            payload = pickle.dumps(detached(report), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            return False
        if len(payload) > MAX_ENTRY_BYTES:
            return False
        header = {
            "schema": SCHEMA,
            "key": self.key,
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "files": dict(deps.files),
        }
        blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
        try:
            atomic_write_bytes(self.path, blob + b"\n" + payload)
            cachefs.prune(self.path.parent, ["*.report"], MAX_ENTRIES, MAX_BYTES)
        except OSError:
            return False  # a read-only cache folder costs a lint, nothing more
        self.kept = dict(deps.files)
        return True


def _stamp_of(value: Any) -> Stamp:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 6 or not all(type(v) is int for v in value):
        raise ValueError("bad file stamp")
    return (value[0], value[1], value[2], value[3], value[4], value[5])


def slot_for(path: Path, config: Config) -> Slot | None:
    """The slot of ``path`` linted with ``config``; None when its report is not to be
    kept: caches off, ``--confirm`` asked (real sessions), the file not a readable
    regular file within the limits (the lint says why), a profile file unreadable."""
    from onnxlint.runtime.identity import cache_enabled

    if not cache_enabled(config) or (config.confirm or {}).get("mode") not in (None, "off"):
        return None
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    digest = regular_file_digest(real, config.limits.max_file_bytes)
    if digest is None:
        return None
    sha, size, seen = digest
    settings = config_material(config)
    if settings is None:
        return None
    key = {
        "schema": SCHEMA,
        "code": code_identity(),
        "env": environment_identity(),
        "config": settings,
        "label": str(path),
        "file": {"real": real, "sha256": sha, "size": size},
    }
    from onnxlint.cachefs import cache_root

    blob = json.dumps(key, sort_keys=True, separators=(",", ":")).encode("utf-8")
    name = hashlib.sha256(blob).hexdigest()[:40] + ".report"
    return Slot(cache_root() / FOLDER / name, json.loads(json.dumps(key)), seen)


def detached(report: Report) -> Report:
    """A copy of ``report`` without what an entry does not keep: the graphs its partition
    plans were computed on (the HTML report's input; every other output reads the plans)."""
    plans = [
        dataclasses.replace(p, graph=None) if getattr(p, "graph", None) is not None else p
        for p in report.partitions
    ]
    return dataclasses.replace(report, partitions=plans)


# ---------------------------------------------------------------------------
# Reading an entry: the report's own data classes, nothing else

#: (module, name) of what an entry may build: the report's classes and the plain
#: containers pickle names by reference
ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "complex"),
        ("copyreg", "_reconstructor"),
        ("builtins", "object"),
        ("onnxlint.report", "Report"),
        ("onnxlint.diagnostics", "Diagnostic"),
        ("onnxlint.diagnostics", "Location"),
        ("onnxlint.diagnostics", "Fix"),
        ("onnxlint.diagnostics", "Cause"),
        ("onnxlint.diagnostics", "Severity"),
        ("onnxlint.diagnostics", "Category"),
        ("onnxlint.diagnostics", "Applicability"),
        ("onnxlint.causes", "WhatIf"),
        ("onnxlint.analyses.partition_plan", "PartitionPlan"),
        ("onnxlint.analyses.partition_plan", "Partition"),
        ("onnxlint.analyses.partition_plan", "Crossing"),
        ("onnxlint.analyses.bytecount", "ByteCount"),
    }
)


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a report")
        return super().find_class(module, name)

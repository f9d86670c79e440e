"""Execution-provider capability profiles: the shipped profiles, found by name and loaded.

A profile is a JSON document (``rules/eps/<id>.json``, schema in
``rules/schema/ep-profile.schema.json``) that says which nodes one ONNX Runtime
execution provider claims and how it partitions. This package turns such a
document into an immutable :class:`Profile` (the records: ``profiles.model``; validation:
``profiles.validate``; building, and a profile under another ORT release:
``profiles.build``); names resolve through the one alias table,
:func:`onnxlint.ep_names.alias_table`. :mod:`onnxlint.analyses.capability` evaluates
nodes against a profile.

Start-up stays cheap: resolving ``--ep qnn`` reads only ``rules/eps/index.json``
(ids, EP names, aliases); a profile file is parsed and validated the first time
it is asked for and cached for the life of the process. ``jsonschema`` is
imported only when a profile is actually validated.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from onnxlint.data import data_dir
from onnxlint.ep_names import alias_table
from onnxlint.profiles.build import build_profile
from onnxlint.profiles.model import (
    Constraint,
    OpRange,
    OpSupport,
    Profile,
    ProfileError,
    Provenance,
    RequantizedConstantFailure,
    TensorDtypes,
    UnknownProfileError,
)
from onnxlint.profiles.validate import json_path, validate_profile_data

__all__ = [
    "Constraint",
    "OpRange",
    "OpSupport",
    "Profile",
    "ProfileError",
    "ProfileInfo",
    "Provenance",
    "RequantizedConstantFailure",
    "TensorDtypes",
    "UnknownProfileError",
    "all_profiles",
    "json_path",
    "list_profiles",
    "load_profile",
    "load_profile_file",
    "resolve",
    "validate_profile_data",
]

EPS_DIR = "eps"
INDEX_FILE = "index.json"


# ---------------------------------------------------------------------------
# Shipped profiles: index, alias resolution, cache


@dataclass(frozen=True)
class ProfileInfo:
    """One row of ``rules/eps/index.json``: enough to resolve a name without loading."""

    id: str
    ep: str
    file: str
    aliases: tuple[str, ...]
    default_for_ep: bool
    variant: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    describes: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)


_lock = threading.Lock()
_cache: dict[str, Profile] = {}


@cache
def list_profiles() -> tuple[ProfileInfo, ...]:
    """Every shipped profile, from the index (no profile file is parsed)."""
    path = data_dir() / EPS_DIR / INDEX_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["profiles"]
    except (OSError, ValueError, KeyError) as exc:
        raise ProfileError(str(path), [f"(root): cannot read the profile index: {exc}"]) from exc
    return tuple(
        ProfileInfo(
            id=r["id"],
            ep=r["ep"],
            file=r["file"],
            aliases=tuple(r.get("aliases", [])),
            default_for_ep=bool(r.get("default_for_ep", False)),
            variant=dict(r.get("variant", {})),
            describes=dict(r.get("describes", {})),
        )
        for r in rows
    )


def resolve(name: str) -> str:
    """Map an EP name or alias (``qnn``, ``trt``, ``QNNExecutionProvider``) to a profile id."""
    key = name.strip().lower()
    table = alias_table()
    if key in table:
        return table[key]
    raise UnknownProfileError(name, sorted({i.id for i in list_profiles()}))


def _load_file(path: Path, source: str, validate: bool = True) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(source, [f"(root): cannot read file: {exc.strerror or exc}"]) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(
            source, [f"(root): not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"]
        ) from exc
    if validate:
        validate_profile_data(data, source)
    return build_profile(data, source)


def load_profile(name: str) -> Profile:
    """Load a shipped profile by id, alias or ORT EP name (cached per process)."""
    pid = resolve(name)
    with _lock:
        hit = _cache.get(pid)
    if hit is not None:
        return hit
    info = next(i for i in list_profiles() if i.id == pid)
    # shipped profiles are validated by the test suite (tests/test_profiles.py); validating
    # them again here cost about 0.5 s per profile on every lint (docs/performance.md)
    profile = _load_file(data_dir() / EPS_DIR / info.file, f"{EPS_DIR}/{info.file}", validate=False)
    with _lock:
        return _cache.setdefault(pid, profile)


def load_profile_file(path: str | Path) -> Profile:
    """Load and validate a user profile (``--ep-profile my_npu.json``), cached by resolved path."""
    p = Path(path).expanduser()
    key = f"file:{p.resolve()}"
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    profile = _load_file(p, str(path))
    with _lock:
        return _cache.setdefault(key, profile)


def get_profile(name_or_path: str | Path) -> Profile:
    """``--ep`` value or ``--ep-profile`` path: a path if it looks like one, else an EP name."""
    s = str(name_or_path)
    # A bare word is always an EP name, even if a file of that name happens to exist.
    if isinstance(name_or_path, Path) or s.lower().endswith(".json") or "/" in s or "\\" in s:
        return load_profile_file(s)
    return load_profile(s)


def all_profiles() -> list[Profile]:
    """Load every shipped profile (for `onnxlint eps` and the tests; not used at start-up)."""
    return [load_profile(i.id) for i in list_profiles()]


def clear_cache() -> None:
    """Forget loaded profiles (tests that rewrite a user profile between loads)."""
    with _lock:
        _cache.clear()

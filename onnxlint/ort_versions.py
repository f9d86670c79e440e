"""What each ONNX Runtime release loads: max ai.onnx opset, ai.onnx.ml opset and IR version.

The target release defaults to the installed onnxruntime and is set with
``--target-ort``. For the installed ORT the limits are asked of that ORT itself
(:func:`installed_limits`: tiny models loaded in an isolated worker, once per
ORT build, cached on disk next to the level-1 cache), so a release newer than
onnxlint never gets last year's limits. Other targets are looked up in the
shipped table (``rules/ort_versions.json``, with provenance); a target newer
than the table's newest row is *assumed* to load what that row loads, and the
diagnostics say so.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from onnxlint.data import load_json
from onnxlint.ep_names import CPU_EP

LIMITS_SCHEMA = "onnxlint-ort-limits/1"
_LIMIT_KEYS = ("max_opset", "ml_opset", "max_ir")


@dataclass(frozen=True)
class OrtRelease:
    version: str
    max_opset: int
    ml_opset: int
    max_ir: int
    #: "installed" (asked of the installed ORT), or the table row's source
    #: ("measured", "documented", "derived")
    source: str
    exact: bool  # False when the requested release is not in the table and a neighbour was used
    #: the newest table row, when the target is newer than every row (its limits are assumed)
    assumed_from: str | None = None


def _key(version: str) -> tuple[int, ...]:
    parts = []
    for p in version.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


#: the distributions that install the ``onnxruntime`` module, the plain one first (the
#: session worker keeps its own list: it runs where onnxlint is not installed)
ORT_DISTRIBUTIONS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
)


@cache
def installed_ort_version() -> str | None:
    """The version of the first of :data:`ORT_DISTRIBUTIONS` installed (None: none is)."""
    from onnxlint.distinfo import version

    return next(filter(None, map(version, ORT_DISTRIBUTIONS)), None)


def release(target: str | None = None, *, cache: bool = True) -> OrtRelease:
    """What ``target`` loads (default: the installed onnxruntime, else the newest row).

    The installed release (``target`` unset, or the same major.minor) is asked
    directly; ``cache=False`` (``--no-cache``) skips the on-disk cache of that answer.
    """
    installed = installed_ort_version()
    if installed and (target is None or _key(target) == _key(installed)):
        measured = installed_limits(cache=cache)
        if measured is not None:
            return OrtRelease(
                version=installed,
                max_opset=measured["max_opset"],
                ml_opset=measured["ml_opset"],
                max_ir=measured["max_ir"],
                source="installed",
                exact=True,
            )
    return table_release(target or installed)


def table_release(target: str | None) -> OrtRelease:
    """The table's row for ``target`` (default: the newest row), never asking an ORT."""
    rows = load_json("ort_versions.json")["releases"]
    wanted = target or rows[-1]["ort"]
    key = _key(wanted)
    best = rows[0]
    for row in rows:
        if _key(row["ort"]) <= key:
            best = row
    exact = _key(best["ort"]) == key
    newest = rows[-1]["ort"]
    return OrtRelease(
        version=wanted,
        max_opset=best["max_opset"],
        ml_opset=best["ml_opset"],
        max_ir=best["max_ir"],
        source=best["source"],
        exact=exact,
        assumed_from=newest if key > _key(newest) else None,
    )


def newest_table_release() -> str:
    return str(load_json("ort_versions.json")["releases"][-1]["ort"])


# ---------------------------------------------------------------------------
# Asking the installed ORT


def _valid_limits(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    for k in _LIMIT_KEYS:
        v = data.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            return None
        out[k] = v
    providers = data.get("providers", [])
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        return None
    out["providers"] = providers
    return out


def limits_of(runner: str | None = None, *, timeout_s: float = 60.0) -> dict[str, Any] | None:
    """Ask the ORT under ``runner`` (default: this interpreter) what it loads; None on failure.

    ``max_opset``, ``ml_opset``, ``max_ir`` (ints) and ``providers`` (its built-in EPs).
    """
    from onnxlint.runtime.batch import WorkerItem, run_items
    from onnxlint.runtime.runners import EpSpec

    res = run_items(
        [WorkerItem(id="limits", kind="limits")],
        spec=EpSpec(CPU_EP),
        runner=runner or sys.executable,
        timeout_s=timeout_s,
    )[0]
    return _valid_limits(res.facts.get("limits")) if res.ok else None


def _limits_file(identity: dict[str, Any]) -> Path:
    from onnxlint.cachefs import keyed_file

    return keyed_file("ort-limits", {"schema": LIMITS_SCHEMA, "ort": identity})


_memo: dict[str, dict[str, Any] | None] = {}


def installed_limits(*, cache: bool = True) -> dict[str, Any] | None:
    """``max_opset``, ``ml_opset``, ``max_ir`` and ``providers`` of the installed ORT
    (None: not installed, or it cannot be asked).

    Keyed by the ORT build (version, location, size and mtime of its native
    libraries): the worker runs once per build; the answer is kept in memory and
    on disk (unless ``cache`` is False or ``ONNXLINT_NO_CACHE`` is set).
    """
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    identity = ort_identity()
    if identity is None:
        return None
    memo_key = json.dumps(identity, sort_keys=True)
    if memo_key in _memo:
        if _memo[memo_key] is None:
            _unknown_limits()
        return _memo[memo_key]
    use_disk = cache and cache_enabled(None)
    path = _limits_file(identity)
    if use_disk:
        found = _stored_limits(path, identity)
        if found is not None:
            _memo[memo_key] = found
            return found
    found = _prefaced_limits() or limits_of()
    _memo[memo_key] = found
    if found is None:
        _unknown_limits()
    if use_disk and found is not None:
        from onnxlint.fsutil import atomic_write_text

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {"schema": LIMITS_SCHEMA, "ort": identity, "limits": found}
            atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True))
        except OSError:
            pass  # a read-only cache folder costs a worker per process, nothing more
    return found


def _unknown_limits() -> None:
    from onnxlint import lintdeps

    # the worker that asks may have failed for reasons of its own (a timeout): the
    # lint used the version table instead, and may not next time
    lintdeps.volatile("the installed ORT's limits could not be asked")


def _stored_limits(path: Path, identity: dict[str, Any]) -> dict[str, Any] | None:
    try:
        stored = json.loads(path.read_text("utf-8"))
        if stored.get("schema") == LIMITS_SCHEMA and stored.get("ort") == identity:
            return _valid_limits(stored.get("limits"))
    except (OSError, ValueError, AttributeError):
        pass  # absent or unreadable: measured again and rewritten
    return None


#: the id of the limits item a prewarmed worker answers first (:func:`limits_preface`)
_PREFACE_ID = "limits"


def limits_preface() -> dict[str, Any] | None:
    """The request a worker started ahead of a lint answers first when this process will
    have to ask the installed ORT for its limits (none in memory or on disk): the lint then
    reads them from that worker (:func:`installed_limits`) instead of starting a second
    one beside ORT's level-1 worker. None when they are known, or no ORT is installed."""
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    identity = ort_identity()
    if identity is None or json.dumps(identity, sort_keys=True) in _memo:
        return None
    if cache_enabled(None) and _stored_limits(_limits_file(identity), identity) is not None:
        return None
    from onnxlint.runtime.batch import WorkerItem, make_request
    from onnxlint.runtime.processes import private_temp_dir
    from onnxlint.runtime.runners import EpSpec

    item = WorkerItem(id=_PREFACE_ID, kind="limits")
    return make_request([item], [0], EpSpec(CPU_EP), private_temp_dir("worker-logs"))


def _prefaced_limits(timeout_s: float = 60.0) -> dict[str, Any] | None:
    """The limits the prewarmed worker answered first (:func:`limits_preface`); None when
    no worker was started with that request, or it gave no valid answer."""
    from onnxlint.runtime.batch import DEFAULT_STARTUP_TIMEOUT_S
    from onnxlint.runtime.processes import preface_result

    ev = preface_result(_PREFACE_ID, DEFAULT_STARTUP_TIMEOUT_S + timeout_s)
    if ev is None or not ev.get("ok"):
        return None
    return _valid_limits(ev.get("limits"))


def first_release_with_opset(opset: int) -> str | None:
    for row in load_json("ort_versions.json")["releases"]:
        if row["max_opset"] >= opset:
            return str(row["ort"])
    return None


def runtime_opset_limit(provider: str, plugin: bool = False) -> tuple[int, str] | None:
    """(max ai.onnx opset, ORT version) when ``provider`` runs inside the installed ORT:
    built into it, or a plugin EP (``plugin``: a library the installed ORT loads, such as
    onnxruntime-qnn's).

    An EP profile's ``ort-max-opset`` limit is a fact of the ORT release, not of
    the EP: for EPs that run inside the installed ORT it follows that ORT
    (:mod:`onnxlint.profiles`). None when the provider is neither built in nor a plugin
    (another ORT package such as OpenVINO's) or the ORT cannot be asked.
    """
    found = installed_limits()
    if found is None or not (plugin or provider in found["providers"]):
        return None
    return int(found["max_opset"]), installed_ort_version() or "?"


@dataclass(frozen=True)
class LoadRefusal:
    """A model arrangement some ORT releases refuse at load (``load_refusals`` in
    ``rules/ort_versions.json``, with provenance)."""

    id: str
    op: str
    releases: tuple[str, ...]
    reason: str
    provenance: str
    #: the input of ``op`` the arrangement computes, and the nodes that compute it, the
    #: first writing that input and each next one writing the previous one's input 0
    input: int = 0
    producers: tuple[Mapping[str, Any], ...] = ()
    #: the dims that must be static: "gathered" (the last producer's input at the index
    #: a producer's constant holds), "axis" (``op``'s axis attribute on its input 0)
    static: tuple[str, ...] = ()
    fix: str = ""

    def refused_by(self, version: str | None) -> bool:
        """Whether ORT ``version`` (major.minor compared) is one of the releases."""
        return version is not None and _key(version) in {_key(r) for r in self.releases}


@cache
def load_refusals() -> tuple[LoadRefusal, ...]:
    return tuple(
        LoadRefusal(
            id=r["id"],
            op=r["op"],
            releases=tuple(r["releases"]),
            reason=r["reason"],
            provenance=r["provenance"],
            input=int(r.get("input", 0)),
            producers=tuple(r.get("producers", ())),
            static=tuple(r.get("static", ())),
            fix=str(r.get("fix", "")),
        )
        for r in load_json("ort_versions.json").get("load_refusals", [])
    )


def ep_ort_version(shipped: str | None, target: str | None) -> str | None:
    """The onnxruntime release an EP runs in: the one its package ships (the profile's
    ``runtime_onnxruntime``: onnxruntime-openvino is its own build of ORT), else the one it
    is loaded into, ``target`` (``--target-ort``) or the installed one (None when no ORT is
    installed). CUDA, QNN and the other EPs run in whatever ORT the user deploys."""
    return shipped or target or installed_ort_version()

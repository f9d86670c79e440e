"""``--confirm``: check the partition prediction against real ONNX Runtime sessions.

For every requested EP this module creates real sessions through the isolated
worker (:mod:`onnxlint.runtime.client`), at two graph levels:

- ``disabled`` (graph optimizations off): what ORT partitions is the graph as
  exported, so each node of the model is compared with its prediction, node
  for node, after normalising ORT's renames (``_token_N``, the internal NHWC
  domain, inserted Transposes);
- ``default`` (what really runs): ORT reports the graph after its level-1
  optimizations, which is compared with the prediction for the level-1 graph;
  nodes that only one side has (fused, folded, duplicated DQ, expanded ops)
  are counted and explained rather than called wrong.

Each disagreement becomes a diagnostic (category ``confirmation``) that says
which side was wrong when it can tell: the EP's own refusal reason from its
verbose log means the profile claimed too much; an EP claim the profile did not
expect means the profile is too conservative. Silent failures (ORT falling back
to CPU wholesale, an EP missing from the session, zero accelerator nodes) and
session-creation time per EP are reported too.

Results are cached on disk, keyed by the model's content hash, the EP and its
options, the runner's ORT/EP package versions and the request, so re-runs and
the language server show confirmed results without recompiling. A truncated or
corrupt cache entry is discarded, never trusted.

The prediction is the one the partition analysis makes for each EP alone
(``[EP, CPU]``), since each real session runs one EP with CPU fallback.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint import progress
from onnxlint.diagnostics import Diagnostic, Fix, Location, Severity
from onnxlint.runtime.results import (
    STATUS_CRASH,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_OOM,
    STATUS_TIMEOUT,
    AssignedNode,
    Fallback,
    NodeVerdict,
    SessionResult,
)

if TYPE_CHECKING:
    from onnxlint.config import Config
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex, NodeRef
    from onnxlint.profiles import Profile
    from onnxlint.report import Report

CPU_EP = "CPUExecutionProvider"
LEVELS = ("disabled", "default")
#: prediction graph level for each session level
PREDICTION_LEVEL = {"disabled": "exported", "default": "optimized"}
LEVEL_TEXT = {"disabled": "optimizations disabled", "default": "default optimizations"}
CACHE_SCHEMA = "onnxlint-confirm-cache/2"
#: the confirm cache keeps the most recently used entries within these bounds
CACHE_MAX_ENTRIES = 512
CACHE_MAX_BYTES = 64 * 2**20
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_CAP_MB = 8192
#: results that say something about the model (a timeout under the same limit, which is
#: part of the key, included: a QNN session that takes minutes should not cost minutes at
#: every re-run); a runner that could not start says nothing about it
_CACHEABLE = (STATUS_OK, STATUS_ERROR, STATUS_TIMEOUT, STATUS_CRASH, STATUS_OOM)
_RUNNER_DISTS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
    "onnxruntime-ep-openvino",
)


# ---------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class ConfirmSettings:
    """How to confirm: from ``[tool.onnxlint.confirm]`` plus the CLI flags.

    ``mode``: ``off``, ``run`` (create sessions, use the cache), ``cache-only``
    (never create a session: show what the cache has, e.g. in the language server).
    """

    mode: str = "off"
    use_cache: bool = True
    cache_dir: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB
    runners: dict[str, str] = field(default_factory=dict)
    root: Path | None = None
    levels: tuple[str, ...] = LEVELS

    @classmethod
    def from_config(cls, config: Config) -> ConfirmSettings:
        c = dict(config.confirm or {})
        cache_dir = c.get("cache-dir")
        path = None
        if cache_dir:
            path = Path(os.path.expanduser(str(cache_dir)))
            if not path.is_absolute() and config.root is not None:
                path = config.root / path
        return cls(
            mode=str(c.get("mode", "off")),
            use_cache=bool(c.get("cache", True)),
            cache_dir=path,
            timeout_s=float(c.get("timeout-s", DEFAULT_TIMEOUT_S)),
            memory_cap_mb=int(c.get("memory-cap-mb", DEFAULT_MEMORY_CAP_MB)),
            runners=dict(config.runners or {}),
            root=config.root,
            levels=tuple(c.get("levels", LEVELS)),
        )


def default_cache_dir() -> Path:
    from onnxlint.cachefs import cache_root

    return cache_root() / "confirm"


# ---------------------------------------------------------------------------
# The on-disk cache


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


def result_to_json(r: SessionResult) -> dict[str, Any]:
    d = asdict(r)
    d["verdicts"] = [
        {
            "op_type": v.op_type,
            "name": v.name,
            "index": v.index,
            "verdict": "PASSED" if v.passed else "FAILED",
            "reason": v.reason,
            "unit": v.unit,
            "unit_op": v.unit_op,
        }
        for v in r.verdicts
    ]
    return d


def result_from_json(d: dict[str, Any]) -> SessionResult:
    """Rebuild a SessionResult written by :func:`result_to_json`; raises on malformed data."""
    return SessionResult(
        request_id=str(d["request_id"]),
        status=str(d["status"]),
        provider=str(d["provider"]),
        error=d.get("error"),
        error_kind=d.get("error_kind"),
        create_s=d.get("create_s"),
        assignment=[AssignedNode.from_json(n) for n in d.get("assignment") or []],
        assignment_source=d.get("assignment_source"),
        verdicts=[NodeVerdict.from_json(v) for v in d.get("verdicts") or []],
        fallback=Fallback(**(d.get("fallback") or {})),
        session_providers=list(d.get("session_providers") or []),
        versions=dict(d.get("versions") or {}),
        facts=dict(d.get("facts") or {}),
        log_tail=list(d.get("log_tail") or []),
        signal=d.get("signal"),
        worker_pid=None,
        output_path=d.get("output_path"),
        run=d.get("run"),
    )


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
        try:
            # never follows a link or blocks on a FIFO; another user's entry is not read
            raw = cachefs.read_entry(path, CACHE_MAX_BYTES)
        except cachefs.UnusableEntry as exc:
            cachefs.discard(path)
            return CacheLookup(None, str(exc))
        if raw is None:
            return CacheLookup(None)
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


# ---------------------------------------------------------------------------
# Mapping ORT's report onto node paths


def _reported_to_paths(
    index: ModelIndex, reported: list[AssignedNode]
) -> tuple[dict[str, str], list[AssignedNode], list[str]]:
    """(node path -> EP, inserted nodes, unreported node paths) for one graph level."""
    from onnxlint.runtime.normalise import SourceNode, match_assignment

    nodes = [n for n in index.nodes if not n.graph.is_function]
    srcs = [
        SourceNode(i, n.name, n.op_type, "" if n.domain == "ai.onnx" else n.domain)
        for i, n in enumerate(nodes)
    ]
    m = match_assignment(srcs, reported)
    actual = {nodes[i].path: ep for i, ep in m.ep_by_index.items()}
    unreported = [nodes[i].path for i in m.unreported]
    return actual, list(m.inserted), unreported


def _reasons_by_path(index: ModelIndex, result: SessionResult) -> dict[str, list[str]]:
    """Node path -> the EP's reasons for refusing it (QNN's verbose validation log)."""
    from onnxlint.runtime.normalise import strip_token

    by_name: dict[tuple[str, str], str] = {}
    by_op: dict[str, list[str]] = {}
    for n in index.nodes:
        if n.graph.is_function:
            continue
        if n.name:
            by_name.setdefault((n.name, n.op_type), n.path)
        by_op.setdefault(n.op_type, []).append(n.path)
    out: dict[str, list[str]] = {}
    unnamed: dict[str, list[str]] = {}
    for (op, name), reasons in result.refusal_reasons().items():
        path = by_name.get((strip_token(name), op)) if name else None
        if path is not None:
            out.setdefault(path, []).extend(r for r in reasons if r not in out.get(path, []))
        elif not name:
            unnamed.setdefault(op, []).extend(reasons)
    # unnamed nodes: only when every refusal of that op gives the same reason
    for op, reasons in unnamed.items():
        if len(set(reasons)) == 1:
            for path in by_op.get(op, []):
                out.setdefault(path, [reasons[0]])
    return out


# ---------------------------------------------------------------------------
# The diff


@dataclass
class LevelDiff:
    """Prediction against reality for one EP at one session level."""

    ep: str
    level: str
    result: SessionResult
    cached: bool = False
    predicted: dict[str, str] = field(default_factory=dict)
    actual: dict[str, str] = field(default_factory=dict)
    inserted: list[AssignedNode] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    predicted_partitions: dict[str, int] = field(default_factory=dict)
    prediction_note: str | None = None
    prediction: Prediction | None = field(default=None, repr=False)

    @property
    def compared(self) -> list[str]:
        return [p for p in self.predicted if p in self.actual]

    @property
    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((self.predicted[p], self.actual[p]) for p in self.compared)

    @property
    def mismatches(self) -> list[str]:
        return [p for p in self.compared if self.predicted[p] != self.actual[p]]

    @property
    def agreement(self) -> float | None:
        n = len(self.compared)
        return None if n == 0 else 1.0 - len(self.mismatches) / n

    @property
    def only_predicted(self) -> list[str]:
        """Predicted nodes ORT did not report at this level (folded, fused, constants)."""
        return [p for p in self.predicted if p not in self.actual]

    def actual_partitions(self) -> dict[str, int]:
        """Accelerator partitions ORT made (its CPU "subgraphs" are not partitions)."""
        subgraphs = self.result.facts.get("ep_subgraphs")
        if isinstance(subgraphs, list):
            return dict(
                Counter(
                    str(s.get("ep"))
                    for s in subgraphs
                    if isinstance(s, dict) and s.get("ep") != CPU_EP
                )
            )
        return {}

    def actual_counts(self) -> dict[str, int]:
        return dict(Counter(n.ep for n in self.result.assignment))

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "ep": self.ep,
            "level": self.level,
            "status": r.status,
            "error": r.error,
            "cached": self.cached,
            "create_s": r.create_s,
            "assignment_source": r.assignment_source,
            "versions": {k: v for k, v in r.versions.items() if k != "executable"},
            "predicted_nodes": dict(Counter(self.predicted.values())),
            "actual_nodes": self.actual_counts(),
            "predicted_partitions": self.predicted_partitions,
            "actual_partitions": self.actual_partitions(),
            "compared": len(self.compared),
            "agree": len(self.compared) - len(self.mismatches),
            "agreement": self.agreement,
            "confusion": {f"{a}->{b}": n for (a, b), n in sorted(self.confusion.items())},
            "mismatches": {p: [self.predicted[p], self.actual[p]] for p in self.mismatches},
            "only_predicted": len(self.only_predicted),
            "inserted": dict(Counter(n.op_type for n in self.inserted)),
            "fallback": self.result.fallback.message or None,
            "prediction_note": self.prediction_note,
        }


@dataclass
class Prediction:
    """What the partition analysis predicts for one EP at one graph level."""

    node_ep: dict[str, str]
    partitions: dict[str, int]
    index: ModelIndex
    verdicts: dict[str, Any] = field(default_factory=dict)  # path -> Verdict of the EP
    note: str | None = None


def predict(ctx: LintContext, profile: Profile, level: str) -> Prediction | None:
    """The prediction for ``[profile, CPU]`` at ``level`` (``exported`` or ``optimized``)."""
    try:
        from onnxlint.analyses.assignment import Assignment, assign_level
        from onnxlint.analyses.partition import plan_level
    except ImportError:  # pragma: no cover - the partition analysis ships with onnxlint
        return None
    shared = ctx.analysis(Assignment)
    la_shared = shared.level(level)
    if la_shared is None:
        return None
    la = assign_level(la_shared.graph, [profile])
    plan = plan_level(la, ctx.config.assume_dims)
    verdicts = {}
    for na in la:
        v = na.verdict_for(profile.ep)
        if v is not None:
            verdicts[na.node.path] = v
    return Prediction(
        node_ep=dict(plan.node_ep),
        partitions=dict(Counter(p.ep for p in plan.partitions)),
        index=la_shared.graph.index,
        verdicts=verdicts,
        note=plan.note,
    )


# ---------------------------------------------------------------------------
# Running


@dataclass
class EpConfirmation:
    ep: str  # provider name
    profile_id: str
    runner: str
    levels: list[LevelDiff] = field(default_factory=list)
    discarded: str | None = None
    skipped: str | None = None  # why no session was created (cache-only miss, unsafe model)


def _model_for_worker(ctx: LintContext) -> Any:
    """The file itself when ORT can read it (sidecars resolve next to it), else the proto."""
    if ctx.loaded.path is not None and not ctx.loaded.is_text:
        return str(ctx.loaded.path.resolve())
    return ctx.model  # ONNX text, bytes or a ModelProto: the worker gets a binary copy


def _unsafe_reason(ctx: LintContext) -> str | None:
    """Why ORT must not be handed this model (it would read files onnxlint refused)."""
    for d in ctx.loaded.diagnostics:
        if d.code in ("OL010", "OL011", "OL012"):
            return f"the loader found an external-data problem ({d.code}: {d.message})"
    from onnxlint.tensors import first_data_mismatch

    mismatch = first_data_mismatch(ctx.model)
    if mismatch is not None:
        _, where, declared, stored = mismatch
        return (
            f"a tensor in {where} declares {declared} elements but its data holds {stored} "
            "(OL109); ORT would refuse it or try to allocate the declared size"
        )
    from onnxlint.compiled import CompiledModel

    cm = ctx.analysis(CompiledModel)
    for side in cm.sidecars.values():
        if side.state in ("unsafe", "outside"):
            return f"an EPContext sidecar path leaves the model folder ({side.location})"
    return None


def confirm_ep(ctx: LintContext, profile: Profile, settings: ConfirmSettings) -> EpConfirmation:
    """Create (or fetch from the cache) the sessions for one EP and diff them."""
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    options = dict((profile.variant or {}).get("provider_options") or {})
    try:
        spec = EpSpec.for_ep(profile.ep, {str(k): str(v) for k, v in options.items()})
    except ValueError:  # a user profile for an EP onnxlint cannot create sessions on
        out = EpConfirmation(ep=profile.ep, profile_id=profile.id, runner="")
        out.skipped = f"onnxlint does not know how to create a session on {profile.ep}"
        return out
    runner = resolve_runner(spec.provider, settings.runners, root=settings.root)
    out = EpConfirmation(ep=spec.provider, profile_id=profile.id, runner=runner)
    free_dims = {str(k): int(v) for k, v in (ctx.config.assume_dims or {}).items()}
    versions = runner_versions(runner)
    material = {
        "schema": CACHE_SCHEMA,
        "model": ctx.loaded.content_hash,
        "provider": spec.provider,
        "options": dict(sorted(spec.options.items())),
        "plugin": spec.plugin_package,
        "runner": versions,
        "levels": list(settings.levels),
        "free_dims": dict(sorted(free_dims.items())),
        "timeout_s": settings.timeout_s,
        "memory_cap_mb": settings.memory_cap_mb,
    }
    key = cache_key(material)
    cache = ResultCache(settings.cache_dir or default_cache_dir())
    results: list[SessionResult] | None = None
    cached = False
    if settings.use_cache and versions is not None and ctx.loaded.content_hash:
        got = cache.get(key, material)
        out.discarded = got.discarded
        if got.results is not None and len(got.results) == len(settings.levels):
            results, cached = got.results, True
    if results is None:
        if settings.mode == "cache-only":
            out.skipped = "no cached result (cache-only mode never creates a session)"
            return out
        why = _unsafe_reason(ctx)
        if why:
            out.skipped = f"not run: {why}"
            return out
        model = _model_for_worker(ctx)
        reqs = [
            SessionRequest(model, id=level, optimization=level, free_dims=free_dims)
            for level in settings.levels
        ]
        progress.note(
            f"confirming {ctx.loaded.path or 'model'} on {profile.id}: "
            f"{len(reqs)} session{'s' if len(reqs) != 1 else ''} ({', '.join(settings.levels)})"
        )
        t0 = time.perf_counter()
        results = run_sessions(
            reqs,
            spec,
            runner=runner,
            timeout_s=settings.timeout_s,
            memory_cap_mb=settings.memory_cap_mb,
        )
        states = ", ".join(f"{r.status}" for r in results)
        progress.note(f"  {profile.id}: {states} in {time.perf_counter() - t0:.1f} s")
        if (
            settings.use_cache
            and versions is not None
            and ctx.loaded.content_hash
            and all(r.status in _CACHEABLE for r in results)
        ):
            cache.put(key, material, results)
    for level, res in zip(settings.levels, results, strict=False):
        out.levels.append(_diff_level(ctx, profile, level, res, cached))
    return out


def _diff_level(
    ctx: LintContext, profile: Profile, level: str, res: SessionResult, cached: bool
) -> LevelDiff:
    pred = predict(ctx, profile, PREDICTION_LEVEL.get(level, "exported"))
    index = pred.index if pred is not None else ctx.index
    diff = LevelDiff(ep=profile.ep, level=level, result=res, cached=cached)
    if pred is not None:
        diff.predicted = pred.node_ep
        diff.predicted_partitions = {k: v for k, v in pred.partitions.items() if k != CPU_EP}
        diff.prediction_note = pred.note
    else:
        diff.prediction_note = "no prediction for this graph level (ORT could not produce it)"
    if res.ok and res.assignment:
        diff.actual, diff.inserted, diff.unreported = _reported_to_paths(index, res.assignment)
    diff.reasons = _reasons_by_path(index, res)
    diff.prediction = pred
    return diff


def confirm(ctx: LintContext, settings: ConfirmSettings) -> list[EpConfirmation]:
    """Confirm every EP of the lint (CPU only when it is the only EP asked for)."""
    profiles = list(ctx.eps)
    accel = [p for p in profiles if p.ep != CPU_EP]
    wanted = accel or profiles
    if not wanted:
        from onnxlint.profiles import get_profile

        wanted = [get_profile("cpu")]
    return [confirm_ep(ctx, p, settings) for p in wanted]


# ---------------------------------------------------------------------------
# Diagnostics


def _short(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ep(ep: str) -> str:
    return ep[: -len("ExecutionProvider")] if ep.endswith("ExecutionProvider") else ep


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _side(nodes: dict[str, int], parts: dict[str, int], ep: str) -> str:
    """``QNN 123, CPU 2 nodes, 1 QNN partition``."""
    n = parts.get(ep, 0)
    return f"{_counts(nodes)} nodes, {n} {_ep(ep)} partition{'s' if n != 1 else ''}"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{_ep(k)} {v}" for k, v in sorted(d.items())) or "none"


def diagnostics_for(ctx: LintContext, conf: EpConfirmation) -> list[Diagnostic]:
    """Every diagnostic one EP's confirmation produces."""
    from onnxlint.rules import confirmation as R

    out: list[Diagnostic] = []
    ep = conf.ep
    if conf.discarded:
        out.append(
            R.CacheEntryDiscarded.make(Location(), ep=ep, why=conf.discarded, ep_name=_ep(ep))
        )
    if conf.skipped:
        out.append(R.ConfirmSkipped.make(Location(), ep=ep, why=conf.skipped, ep_name=_ep(ep)))
        return out
    seen_mismatch: set[str] = set()
    for diff in conf.levels:
        res = diff.result
        level_text = LEVEL_TEXT.get(diff.level, diff.level)
        graph_level = PREDICTION_LEVEL.get(diff.level)
        if res.error_kind in ("ep-unavailable", "ort-missing", "runner-missing"):
            missing = res.facts.get("missing_package")
            if isinstance(missing, str) and missing:
                package = missing.replace("_", "-")  # the module's distribution name
                command = f"pip install {package}"
                out.append(
                    R.EpUnavailable.make(
                        Location(),
                        "not_installed",
                        ep=ep,
                        ep_name=_ep(ep),
                        runner=conf.runner,
                        package=package,
                        command=command,
                        fix=Fix(title=f"install {package}", command=command),
                    )
                )
                break
            out.append(
                R.EpUnavailable.make(
                    Location(),
                    ep=ep,
                    ep_name=_ep(ep),
                    runner=conf.runner,
                    error=_short(res.error),
                )
            )
            break  # the other level would say the same
        if not res.ok:
            msg_id = res.status if res.status in R.SessionFailed.messages else "error"
            out.append(
                replace(
                    R.SessionFailed.make(
                        Location(),
                        msg_id,
                        ep=ep,
                        ep_name=_ep(ep),
                        level=level_text,
                        error=_short(res.error),
                        tail=_short(" | ".join(res.log_tail[-3:]), 400),
                    ),
                    graph_level=graph_level,
                )
            )
            continue
        if res.fallback.any:
            # a wholesale CPU run the prediction foresaw is still silent, but no surprise
            foreseen = (
                res.fallback.zero_accelerator_nodes
                and diff.prediction is not None
                and ep not in diff.predicted.values()
            )
            out.append(
                replace(
                    R.SilentFallback.make(
                        Location(),
                        "foreseen" if foreseen else "default",
                        severity=Severity.WARNING if foreseen else None,
                        ep=ep,
                        ep_name=_ep(ep),
                        level=level_text,
                        what=res.fallback.message,
                    ),
                    graph_level=graph_level,
                )
            )
        out += _node_diagnostics(ctx, diff, seen_mismatch, graph_level)
        out.append(_summary(diff, conf))
    return out


def _node_ref(index: ModelIndex, path: str) -> NodeRef | None:
    return index.node_by_path(path)


def _node_diagnostics(
    ctx: LintContext, diff: LevelDiff, seen: set[str], graph_level: str | None
) -> list[Diagnostic]:
    from onnxlint.rules import confirmation as R

    pred = diff.prediction
    if pred is None:
        return []
    out: list[Diagnostic] = []
    level_text = LEVEL_TEXT.get(diff.level, diff.level)
    for path in diff.mismatches:
        node = _node_ref(pred.index, path)
        if node is None:
            continue
        # report in the user's model where the node has a counterpart there
        src = ctx.index.node_by_path(path) if diff.level == "disabled" else None
        if diff.level != "disabled" and node.name:
            src = next((n for n in ctx.index.nodes if n.name == node.name), None)
        where = (src or node).location()
        key = (src or node).path
        if key in seen:
            continue
        seen.add(key)
        predicted, actual = diff.predicted[path], diff.actual[path]
        verdict = pred.verdicts.get(path)
        since = node.since_version
        reasons = diff.reasons.get(path) or []
        if predicted == diff.ep and actual != diff.ep:
            if reasons:
                msg_id, why = "refused", "; ".join(_short(r, 200) for r in reasons[:2])
            else:
                msg_id, why = "released", ""
            d = R.PredictedClaimRefused.make(
                where,
                msg_id,
                ep=diff.ep,
                ep_name=_ep(diff.ep),
                op=node.op_type,
                revision=since if since is not None else "?",
                actual=_ep(actual),
                reason=why,
                level=level_text,
            )
        elif actual == diff.ep and predicted != diff.ep:
            d = R.UnpredictedClaim.make(
                where,
                ep=diff.ep,
                ep_name=_ep(diff.ep),
                op=node.op_type,
                revision=since if since is not None else "?",
                predicted=_ep(predicted),
                profile_reason=_short(getattr(verdict, "reason", "") or "no reason recorded", 200),
                level=level_text,
            )
        else:
            continue
        out.append(replace(d, graph_level=graph_level))
    return out


def _summary(diff: LevelDiff, conf: EpConfirmation) -> Diagnostic:
    from onnxlint.rules import confirmation as R

    res = diff.result
    info = diff.to_dict()
    extras: list[str] = []
    if diff.level == "default":
        if diff.only_predicted:
            extras.append(f"{len(diff.only_predicted)} predicted nodes absent from ORT's graph")
        if diff.inserted:
            extras.append(
                "ORT added "
                + ", ".join(f"{n} {op}" for op, n in sorted(info["inserted"].items()))
                + " (layout transform, duplicated DQ, expanded ops)"
            )
    elif diff.inserted:
        extras.append(
            "ORT inserted " + ", ".join(f"{n} {op}" for op, n in sorted(info["inserted"].items()))
        )
    create = f"{res.create_s:.2f} s" if res.create_s is not None else "n/a"
    return replace(
        R.ConfirmSummary.make(
            Location(),
            ep=diff.ep,
            ep_name=_ep(diff.ep),
            level=LEVEL_TEXT.get(diff.level, diff.level),
            predicted=_side(info["predicted_nodes"], diff.predicted_partitions, diff.ep)
            if diff.predicted
            else "nothing (no prediction for this graph)",
            actual=_side(info["actual_nodes"], info["actual_partitions"], diff.ep)
            if res.assignment
            else "nothing reported",
            agree=info["agree"],
            compared=info["compared"],
            pct=_pct(diff.agreement),
            create=create + (" (cached)" if diff.cached else ""),
            notes=("; " + "; ".join(extras)) if extras else "",
            confusion=info["confusion"],
        ),
        graph_level=PREDICTION_LEVEL.get(diff.level),
    )


# ---------------------------------------------------------------------------
# The engine hook


def report_hook(ctx: LintContext, report: Report) -> None:
    """Run the source check and, when asked for, the confirmation of one model."""
    from onnxlint.rules import compiled_model, confirmation

    try:
        for d in compiled_model.CompiledSourceMismatch.check(ctx):
            ctx.emit(d)
    except Exception as exc:  # a hook never takes the lint down
        ctx.emit(
            confirmation.ConfirmSkipped.make(
                Location(), ep_name="source check", why=f"internal error: {exc}"
            )
        )
    settings = ConfirmSettings.from_config(ctx.config)
    if settings.mode == "off":
        return
    t0 = time.perf_counter()
    try:
        confs = confirm(ctx, settings)
    except Exception as exc:  # confirmation never takes the lint down
        ctx.emit(
            confirmation.ConfirmSkipped.make(
                Location(), ep=None, ep_name="all EPs", why=f"internal error: {exc}"
            )
        )
        return
    data = []
    for conf in confs:
        for d in diagnostics_for(ctx, conf):
            ctx.emit(d)
        data.append(
            {
                "ep": conf.ep,
                "profile_id": conf.profile_id,
                "runner": conf.runner,
                "skipped": conf.skipped,
                "levels": [lv.to_dict() for lv in conf.levels],
            }
        )
    report.stats["confirmation"] = data
    report.stats["confirm_s"] = round(time.perf_counter() - t0, 3)

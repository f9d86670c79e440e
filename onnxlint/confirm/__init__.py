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

This module runs the sessions and the stage; the other jobs are modules of their own:
:mod:`~onnxlint.confirm.settings`, :mod:`~onnxlint.confirm.cache` (with
:mod:`~onnxlint.confirm.serialize`), :mod:`~onnxlint.confirm.diff` and
:mod:`~onnxlint.confirm.messages`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from onnxlint import progress
from onnxlint.confirm.cache import (
    CACHE_SCHEMA,
    CACHEABLE,
    ResultCache,
    cache_key,
    default_cache_dir,
    runner_versions,
)
from onnxlint.confirm.diff import (
    CPU_EP,
    EpConfirmation,
    diff_level,
)
from onnxlint.confirm.messages import diagnostics_for
from onnxlint.confirm.settings import ConfirmSettings
from onnxlint.diagnostics import Location

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.profiles import Profile
    from onnxlint.report import Report
    from onnxlint.runtime.results import SessionResult


# ---------------------------------------------------------------------------
# Running


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
            SessionRequest(
                model, id=level, optimization=level, free_dims=free_dims, name_unnamed=True
            )
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
            and all(r.status in CACHEABLE for r in results)
        ):
            cache.put(key, material, results)
    for level, res in zip(settings.levels, results, strict=False):
        out.levels.append(diff_level(ctx, profile, level, res, cached))
    return out


def confirm(ctx: LintContext, settings: ConfirmSettings) -> list[EpConfirmation]:
    """Confirm every EP of the lint (CPU only when it is the only EP asked for)."""
    from onnxlint import lintdeps

    # real sessions answer for the environment they ran in, not for the model alone
    lintdeps.volatile("real sessions (--confirm)")
    profiles = list(ctx.eps)
    accel = [p for p in profiles if p.ep != CPU_EP]
    wanted = accel or profiles
    if not wanted:
        from onnxlint.profiles import get_profile

        wanted = [get_profile("cpu")]
    return [confirm_ep(ctx, p, settings) for p in wanted]


# ---------------------------------------------------------------------------
# The engine hook


def report_hook(ctx: LintContext, report: Report) -> None:
    """Run the confirmation of one model when a mode asks for it (the engine's
    ``confirmation`` stage runs the compiled-source check first, and imports this
    package only when a mode is on)."""
    from onnxlint.rules import confirmation

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

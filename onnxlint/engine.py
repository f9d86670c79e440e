"""The engine: load, index, run the selected rules in one walk, filter, sort.

Front ends (CLI, language server, Python API) call ``lint`` and render the
``Report``; none of them knows how a rule works.
"""

from __future__ import annotations

import functools
import gc
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import onnx

from onnxlint.config import Config, ConfigError, UsageError
from onnxlint.context import LintContext, SharedModel
from onnxlint.diagnostics import Category, Diagnostic, Location, Severity, with_changes
from onnxlint.index import ModelIndex, input_dim_params
from onnxlint.load_failures import drop_consequences
from onnxlint.loader import LoadedModel, load
from onnxlint.report import Report
from onnxlint.rule import ORT_GRAPH_CATEGORIES, Rule, all_rules
from onnxlint.selection import glob_matches, is_enabled, unknown_selectors
from onnxlint.suggest import did_you_mean
from onnxlint.walk import run_rules

#: a model to lint: a path, bytes, a ModelProto, or a model the caller already loaded
#: through ``onnxlint.loader`` (its load findings and hash are used as they are)
ModelSource = str | os.PathLike[str] | bytes | onnx.ModelProto | LoadedModel

#: metadata key a model may carry to silence codes for itself: "OL301,OL5"
INLINE_IGNORE_KEY = "onnxlint:ignore"

#: rule categories whose rules read the EP assignment or the partition plans (and so,
#: for an accelerator EP, ORT's level-1 graph); OL605 is emitted by the partition
#: summary itself. A lint that enables none of them builds neither unless its caller
#: shows the summary (``lint(partition_summary=True)``: the CLI's verdict lines).


def resolve_eps(names: Sequence[str], config: Config) -> list[Any]:
    """EP profiles in priority order for names/aliases and user profile files."""
    from onnxlint import profiles

    resolved = []
    base = config.root
    for extra in config.ep_profiles:
        path = Path(extra)
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            resolved.append(profiles.load_profile_file(path))
        except profiles.ProfileError as exc:
            raise UsageError(str(exc)) from None
    for name in names:
        try:
            prof = profiles.get_profile(name)
        except profiles.UnknownProfileError as exc:
            raise UsageError(f"{exc}{did_you_mean(name, _ep_names(profiles))}") from None
        except profiles.ProfileError as exc:
            raise UsageError(str(exc)) from None
        if all(p.id != prof.id for p in resolved):
            resolved.append(prof)
    return resolved


def _ep_names(profiles: Any) -> list[str]:
    """Every name ``--ep`` accepts for a shipped profile: ids, aliases and ORT EP names."""
    names: list[str] = []
    for info in profiles.list_profiles():
        names += [info.id, *info.aliases]
    return names


def check_selector_values(label: str, values: Iterable[str], exact: bool = False) -> None:
    """Raise ``UsageError`` naming ``label`` (``--select``, ``onnxlint.toml: ignore``) for the
    first value that matches no rule; ``exact``: a code or rule name, no prefix or category."""
    rules = all_rules()
    codes = [r.code for r in rules]
    names = [r.name for r in rules]
    if exact:
        bad = [v for v in values if not any(r.answers_to(v) for r in rules)]
        choices = [*codes, *names]
    else:
        bad = unknown_selectors(values, codes, names, [a for r in rules for a in r.aliases])
        choices = ["ALL", *codes, *names, *(c.value for c in Category)]
    if bad:
        what = "code or rule name" if exact else "code, prefix, category or rule name"
        raise UsageError(f"{label}: unknown {what} {bad[0]!r}{did_you_mean(bad[0], choices)}")


def check_selectors(config: Config, where: str | None = None) -> None:
    """Raise ``UsageError`` for a code, prefix, category or rule name that matches no rule.

    Checks ``select``/``ignore``, the ``severity`` and ``rules`` keys and the codes of
    ``per-file-ignores``/``per-node-ignores``; ``where`` names the origin (default: the
    config file). A typo must not turn a gate green by selecting nothing.
    """
    origin = where or (str(config.source) if config.source else "configuration")
    check_selector_values(f"{origin}: select", config.select)
    check_selector_values(f"{origin}: ignore", config.ignore)
    for key, codes in config.per_file_ignores.items():
        check_selector_values(f"{origin}: per-file-ignores.{key}", codes)
    for key, codes in config.per_node_ignores.items():
        check_selector_values(f"{origin}: per-node-ignores.{key}", codes)
    check_selector_values(f"{origin}: severity", config.severity, exact=True)
    check_selector_values(f"{origin}: rules", config.rules, exact=True)


def unknown_dims(config: Config, reports: Sequence[Report]) -> list[str]:
    """``assume_dims`` names that no graph input of any linted model declares (a typo)."""
    declared: set[str] = set()
    for r in reports:
        declared |= r.dim_params
    if not any(not r.fatal for r in reports):
        return []  # nothing was loaded: no evidence either way
    return [name for name in config.assume_dims if name not in declared]


@cache
def _options_validator(rule_cls: type[Rule]) -> Any:
    import jsonschema

    schema = {
        "type": "object",
        "properties": rule_cls.options_schema,
        "additionalProperties": False,
    }
    return jsonschema.Draft202012Validator(schema)


def instantiate_rules(config: Config) -> list[Rule]:
    """The enabled rules with validated options (bad selectors raise ``UsageError``)."""
    check_selectors(config)
    rules = []
    for cls in all_rules():
        if not is_enabled(
            cls.code, cls.name, cls.category.value, config.select, config.ignore, cls.aliases
        ):
            continue
        # by name, then by code (a code wins); an old code or name counts as the current one
        keys = sorted((k for k in config.rules if cls.answers_to(k)), key=lambda k: k == cls.code)
        options = {k: v for key in keys for k, v in config.rules[key].items()}
        # no options: nothing to validate ({} always meets a properties-only schema), and
        # building 60-odd validators (and importing jsonschema) cost a tenth of a lint
        # a class object is hashable; mypy checks a type[Rule] value against Hashable through
        # the unbound instance __hash__ and refuses it
        errors = (
            list(_options_validator(cls).iter_errors(options))  # type: ignore[arg-type]
            if options
            else []
        )
        if errors:
            msgs = "; ".join(
                f"rules.{cls.code}.{'.'.join(map(str, e.absolute_path)) or '(options)'}: {e.message}"
                for e in errors
            )
            raise ConfigError(msgs)
        rules.append(cls(options))
    return rules


#: the young-generation threshold of the cyclic garbage collector while a lint runs
#: (CPython's default is 700). A lint allocates hundreds of thousands of long-lived
#: objects (index records, value types, verdicts) and few cycles; at 700, CPython ran
#: hundreds of collections and a few full ones that walk every live object, 5-10% of a
#: lint of a light model and of synth_1k (benchmarks/, docs/performance.md)
LINT_GC_THRESHOLD = 20_000

_P = ParamSpec("_P")
_R = TypeVar("_R")
_gc_lock = threading.Lock()
_gc_depth = 0
_gc_saved: tuple[int, int, int] | None = None


def _fewer_gc_passes(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``fn`` with the young-generation threshold raised to ``LINT_GC_THRESHOLD``,
    and put the caller's thresholds back when the last lint in flight ends (a what-if's
    nested lint, the language server's threads). A threshold of 0 (collection off) is
    left alone."""

    @functools.wraps(fn)
    def relaxed(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        global _gc_depth, _gc_saved
        with _gc_lock:
            if _gc_depth == 0:
                current = gc.get_threshold()
                if 0 < current[0] < LINT_GC_THRESHOLD:
                    _gc_saved = current
                    gc.set_threshold(LINT_GC_THRESHOLD, current[1], current[2])
            _gc_depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _gc_lock:
                _gc_depth -= 1
                if _gc_depth == 0 and _gc_saved is not None:
                    gc.set_threshold(*_gc_saved)
                    _gc_saved = None

    return relaxed


@_fewer_gc_passes
def lint(
    source: ModelSource,
    eps: Sequence[str] | None = None,
    config: Config | None = None,
    path_label: str | None = None,
    what_if: bool = True,
    observe: Callable[[LintContext, Report], None] | None = None,
    partition_summary: bool = False,
    hash_proto: bool = True,
    shared: SharedModel | None = None,
    keep_findings: bool = False,
) -> Report:
    """Lint one model; never raises for bad model input (it becomes diagnostics).

    ``partition_summary``: fill ``Report.partitions``/``assignment`` whenever an
    accelerator EP is given, for a front end that shows them; by default they are
    built only when an enabled rule reads them (``plan_lint``).

    ``observe``: called with the lint's context and report after the stages, for a
    front end that reuses what the lint built (the language server's index).

    ``what_if``: predict the outcome of the remedies of root causes (dims pinned) and
    attach them to the report (``Report.what_ifs``). Raises ``UsageError``/``ConfigError``
    for bad arguments or configuration.

    ``hash_proto=False``: for a ModelProto onnxlint made itself (a what-if's pinned
    copy), the report's ``content_hash`` stays empty and the model is not serialised
    to be hashed.

    ``source`` may be a :class:`~onnxlint.loader.LoadedModel` that ``onnxlint.loader``
    returned (the language server's parsed text document): it is linted as it is, not
    read, checked and hashed a second time (``hash_proto`` does not apply).

    ``shared``: a :class:`~onnxlint.context.SharedModel` that several lints of one model
    with one configuration and different EPs go through (``source`` is then ignored: the
    model is its ``loaded``); the first computes the model-only analyses, the others
    read them; its ``edit`` (the language server's one-node edit) lets the rules' run take
    the previous lint's findings over where they provably stand (``onnxlint.walk``).

    ``keep_findings``: keep what each rule found in ``LintContext.findings`` (for
    ``observe``: the next lint of the model with one node edited).
    """
    config = config or Config()
    ep_names = list(eps if eps is not None else config.eps)
    profiles = resolve_eps(ep_names, config)
    rules = instantiate_rules(config)
    plan = plan_lint(config, profiles, rules, partition_summary)
    if shared is not None and not shared.accepts(config):
        shared = None  # another configuration: nothing it holds answers this lint
    if shared is not None:
        loaded = shared.loaded
    elif isinstance(source, LoadedModel):
        loaded = source
    else:
        # the parsed bytes stay until the rules ran: the checker reads them instead of
        # serialising the model again
        loaded = load(source, config.limits, hash_proto=hash_proto, keep_wire=True)
    label = path_label or (str(loaded.path) if loaded.path else None)
    report = Report(path=label, eps=[p.id for p in profiles], content_hash=loaded.content_hash)
    diagnostics = list(loaded.diagnostics)
    ctx: LintContext | None = None
    # ORT's level-1 graph (partition prediction) comes from a worker process: started
    # now, it runs while the rules below do; released (worker ended) whatever happens
    level1 = _start_level1(loaded, config, profiles) if plan.level1 else None
    try:
        if not loaded.fatal:
            ctx = _run_rules(loaded, config, profiles, rules, shared, keep_findings)
            loaded.release_wire()  # read by the checker only: not kept beside the model
            ctx.level1_prefetched = level1 is not None
            report.stats["nodes"] = len(ctx.index.nodes)
            report.dim_params = input_dim_params(loaded.model)
            for stage in stages():
                if stage.wanted(plan):
                    stage.run(ctx, report)
                    ctx.stages_run.append(stage.name)
            if observe is not None:
                observe(ctx, report)
            # after the stages: a stage (e.g. --confirm) may emit diagnostics of its own
            diagnostics += ctx.diagnostics
            if observe is None:
                # nobody reads the analyses again: freed now, not at the next full
                # collection (they refer back to the context), before the findings are
                # copied for the report and rendered (on the 100k-node graph with every
                # EP, 340k objects and about 70 MB)
                ctx.release()
    finally:
        _end_level1(level1)
    report.fatal = loaded.fatal
    ep_ids = {alias: p.id for p in profiles for alias in (p.id, p.ep, p.label)}
    report.diagnostics = _finish(diagnostics, config, loaded, label, ep_ids)
    # an EP whose session fails at load assigns nothing: its fallbacks are not reported
    report.diagnostics = drop_consequences(report.diagnostics)
    if "confirmation" in report.stats:
        from onnxlint.confirmed import apply_confirmation

        apply_confirmation(report)  # confirmed beats predicted
    if what_if and loaded.model is not None and report.partitions and _has_remedy(report):
        report.what_ifs = _what_ifs(loaded.model, report, config, profiles)
    return report


def _has_remedy(report: Report) -> bool:
    """Whether a finding has a remedy a what-if predicts: an EP's refusal caused by
    dynamic dims (``what_if.what_ifs`` predicts for those only). Without one the
    what-ifs are empty, and their modules are not imported."""
    return any(
        d.cause is not None and d.cause.kind == "dynamic-dims" and d.ep is not None
        for d in report.diagnostics
    )


def _what_ifs(
    model: onnx.ModelProto, report: Report, config: Config, profiles: list[Any]
) -> list[Any]:
    """The remedies' predicted outcomes; a failure costs the what-if, never the lint."""
    from onnxlint.what_if import what_ifs

    try:
        # the pinned copy is linted for its plan only: nothing reads its report's hash
        inner = partial(lint, hash_proto=False)
        return what_ifs(model, report.diagnostics, report, config, profiles, lint=inner)
    except Exception as exc:  # reported in the stats; the findings stand
        report.stats["what_if_error"] = f"{type(exc).__name__}: {exc}"
        return []


@dataclass(frozen=True)
class LintPlan:
    """What one lint needs beyond the rules' walk, decided before the model is loaded."""

    #: the partition summary stage (``Report.partitions``/``assignment``, the what-ifs)
    partitions: bool
    #: ORT's level-1 graph, started early in a worker (``analyses.level1.prefetch``)
    level1: bool
    #: ``--confirm``'s real sessions
    confirm: bool


def plan_lint(
    config: Config, profiles: Sequence[Any], rules: Sequence[Rule], partition_summary: bool = False
) -> LintPlan:
    """The stages and the level-1 graph this lint needs, from its rules, EPs and front end.

    An analysis a rule asks for is always computed on demand (``LintContext.analysis``);
    the plan only decides what the engine starts without being asked: the partition
    summary after the rules and the level-1 worker before them.
    """
    from onnxlint.analyses import level1

    confirm = str((config.confirm or {}).get("mode", "off")) == "run"
    consumers = any(r.category in ORT_GRAPH_CATEGORIES for r in rules)
    partitions = bool(profiles) and (partition_summary or consumers or confirm)
    return LintPlan(
        partitions=partitions,
        level1=(partitions or confirm) and level1.needed(config, profiles),
        confirm=confirm,
    )


def _start_level1(loaded: LoadedModel, config: Config, profiles: list[Any]) -> Any:
    """The level-1 job for this lint, started in the background (None: not needed)."""
    from onnxlint.analyses import level1

    return level1.prefetch(loaded, config, profiles)


def _end_level1(job: Any) -> None:
    if job is not None:
        from onnxlint.analyses import level1

        level1.release(job)


def _run_rules(
    loaded: LoadedModel,
    config: Config,
    profiles: list[Any],
    rules: list[Rule],
    shared: SharedModel | None = None,
    keep_findings: bool = False,
) -> LintContext:
    assert loaded.model is not None
    if shared is None:
        ctx = LintContext(loaded, ModelIndex(loaded.model), config, eps=profiles)
    else:
        if shared.index is None:
            shared.index = ModelIndex(loaded.model)
        ctx = LintContext(loaded, shared.index, config, eps=profiles, shared=shared.analyses)
    engine_rules = [r for r in rules if r.emitted_by == "engine"]
    edit = shared.edit if shared is not None else None
    ctx.findings = run_rules(ctx, engine_rules, _crashed, edit, keep_findings, _release_wire)
    return ctx


def _release_wire(ctx: LintContext) -> None:
    """After a model check: once the checker's verdict exists, the file's bytes (read by
    the checker only) are let go, not held through the inference passes and the per-node
    analyses beside the model parsed from them."""
    from onnxlint.analyses.checked import CheckerVerdict

    if ctx.loaded.wire is not None and ctx.computed(CheckerVerdict) is not None:
        ctx.loaded.release_wire()


def _crashed(ctx: LintContext, rule: Rule, exc: Exception, where: Location) -> None:
    import traceback  # only for a crash: its import costs about 15 ms of every lint

    from onnxlint import lintdeps
    from onnxlint.rules.internal import InternalError

    lintdeps.volatile(f"rule {rule.code} crashed")  # memory, recursion: maybe not next time
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    ctx.emit(
        InternalError.make(
            where,
            rule=f"{rule.code} {rule.name}",
            error=f"{type(exc).__name__}: {exc}",
            at=f"{Path(tb.filename).name}:{tb.lineno}",
        )
    )


@dataclass(frozen=True)
class Stage:
    """One step after the rules: its name (``LintContext.stages_run``), whether this
    lint's plan wants it, and the step itself (which never raises)."""

    name: str
    wanted: Callable[[LintPlan], bool]
    run: Callable[[LintContext, Report], None]


def stages() -> tuple[Stage, ...]:
    """What runs after the rules, in this order, on every model that loaded.

    1. ``confirmation``: the compiled-source check and, when asked for, ``--confirm``'s
       real sessions (``onnxlint.confirm``; always run: the source check is cheap);
    2. ``partition-summary``: fills ``Report.partitions`` and ``Report.assignment``
       (``onnxlint.partition_summary``), when the plan wants it. Each stage also decides
       from the configuration and EPs whether it has work.
    """
    from onnxlint.partition_summary import fill_report as partition_summary

    return (
        Stage("confirmation", lambda plan: True, _confirmation),
        Stage("partition-summary", lambda plan: plan.partitions, partition_summary),
    )


def _confirmation(ctx: LintContext, report: Report) -> None:
    """The compiled-source check on every model, then ``--confirm``'s sessions (or their
    cache) when a confirmation mode is on: ``onnxlint.confirm`` (its cache, the worker
    protocol) is imported only then, not by every lint."""
    from onnxlint.rules.compiled_model import source_check

    source_check(ctx)
    if str((ctx.config.confirm or {}).get("mode", "off")) != "off":
        from onnxlint.confirm import report_hook

        report_hook(ctx, report)


def _finish(
    diagnostics: list[Diagnostic],
    config: Config,
    loaded: LoadedModel,
    label: str | None,
    ep_ids: dict[str, str] | None = None,
) -> list[Diagnostic]:
    """Apply selection, suppressions and severity overrides; name EPs by profile id; sort."""
    rules = {r.code: r for r in all_rules()}
    overrides = {}
    for key, sev in config.severity.items():
        for r in rules.values():
            if r.answers_to(key):
                overrides[r.code] = Severity.parse(sev)
    file_ignores: list[str] = []
    if label and config.per_file_ignores:
        rel = _relative(label, config.root)
        for pattern, codes in config.per_file_ignores.items():
            if glob_matches([pattern], rel, Path(label).name):
                file_ignores += codes
    inline: list[str] = []
    if loaded.model is not None:
        for prop in loaded.model.metadata_props:
            if prop.key == INLINE_IGNORE_KEY:
                inline += [c.strip() for c in prop.value.replace(";", ",").split(",") if c.strip()]
    out = []
    seen = set()
    ignores = (*config.ignore, *file_ignores, *inline)
    # whether a code is enabled is the same for each of its findings (thousands of one code
    # on a large model): asked once per code, rule name and category
    enabled_as: dict[tuple[str, str, str], bool] = {}
    for d in diagnostics:
        rule = rules.get(d.code)
        name, category = (rule.name, rule.category.value) if rule else (d.rule, d.category.value)
        aliases = rule.aliases if rule else ()
        code_key = (d.code, name, category)
        enabled = enabled_as.get(code_key)
        if enabled is None:
            enabled = enabled_as[code_key] = is_enabled(
                d.code, name, category, config.select, ignores, aliases
            )
        # fatal load errors are never silenced: nothing else was checked
        if not enabled and not (loaded.fatal and d.category.value == "load"):
            continue
        if config.per_node_ignores and d.location.node_index is not None:
            ignored = [
                c
                for pattern, codes in config.per_node_ignores.items()
                if glob_matches([pattern], d.location.node_name, d.location.node_path)
                for c in codes
            ]
            if ignored and not is_enabled(d.code, name, category, ["ALL"], ignored, aliases):
                continue
        # one copy with every change: a large model's findings nearly all take two
        changes: dict[str, Any] = {}
        if d.code in overrides:
            changes["severity"] = overrides[d.code]
        if label is not None and d.path is None:
            changes["path"] = label
        if d.ep and ep_ids and d.ep in ep_ids and ep_ids[d.ep] != d.ep:
            changes["ep"] = ep_ids[d.ep]
        if changes:
            d = with_changes(d, changes)
        dedup_key = (d.code, d.location, d.ep, d.message)
        if dedup_key in seen:
            continue
        seen.add(dedup_key)
        out.append(d)
    out.sort(key=Diagnostic.sort_key)
    return out


def _relative(label: str, root: Path | None) -> str:
    if root is None:
        return label
    try:
        return Path(label).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return label

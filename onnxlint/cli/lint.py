"""The lint command: every model file under the paths, one job or several, then the report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onnxlint.cli.arguments import parse_dims
from onnxlint.cli.files import check_outputs, iter_model_files
from onnxlint.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    append_step_summary,
    progress_line,
    quiet_broken_pipe,
    sarif_size_problem,
    show_progress,
    terminal_width,
    use_color,
)
from onnxlint.cli.settings import ConfigCache


def _lint_one(path: Path, config: Any, slot: Any = None) -> Any:
    """The report of one file; kept in the report cache's ``slot`` when there is one
    (:mod:`onnxlint.report_cache`: only what is the same next time is kept)."""
    from onnxlint.engine import lint
    from onnxlint.lintdeps import recording

    with recording() as deps:
        # every output format shows the partition verdicts, whatever rules are selected
        report = lint(path, config=config, path_label=str(path), partition_summary=True)
    if slot is not None:
        slot.put(report, deps)
    return report


def _lint_one_for_parent(path: Path, config: Any, slot: Any = None) -> Any:
    """:func:`_lint_one` in a ``-j N`` lint process: the report without the graphs its
    partition plans were computed on, which only ``--html`` reads (with it, the whole
    report is sent). Pickled to the parent, densenet-121's graphs were 45 % of its report's
    1.55 MB and of the time to pickle and unpickle it."""
    from onnxlint.report_cache import detached

    return detached(_lint_one(path, config, slot))


def run_lint(args: argparse.Namespace) -> int:
    prewarmed: list[bool] = []
    try:
        return _run_lint(args, prewarmed)
    finally:
        if any(prewarmed):
            from onnxlint.runtime.processes import drop_spare

            drop_spare()  # the lint did not need it after all


def _cached_reports(args: argparse.Namespace, jobs: list[tuple[Path, Any]]) -> list[Any]:
    """Per job, ``(slot, report)`` from the report cache: the report when the cache has
    it, the slot to keep the one linted otherwise (both None: not to be kept). Nothing
    here imports onnx."""
    from onnxlint import report_cache

    if getattr(args, "html", None):
        return [(None, None)] * len(jobs)  # its pages need the graphs entries do not keep
    out = []
    for path, config in jobs:
        slot = report_cache.slot_for(path, config)
        out.append((slot, slot.get() if slot is not None else None))
    return out


def prewarm_from_args(args: argparse.Namespace) -> bool:
    """The level-1 head start (:func:`onnxlint.analyses.level1.prewarm.prewarm_for`) for
    what the command line asks; returns whether a worker was started."""
    from onnxlint.analyses.level1.prewarm import prewarm_for

    return prewarm_for(
        list(getattr(args, "paths", None) or []),
        [str(e) for e in getattr(args, "eps", None) or []],
        jobs=int(getattr(args, "jobs", 1) or 1),
        no_cache=bool(getattr(args, "no_cache", False)),
        assume_dims=[str(d) for d in getattr(args, "assume_dims", None) or []],
    )


def _run_lint(args: argparse.Namespace, prewarmed: list[bool]) -> int:
    from onnxlint.cli import replay
    from onnxlint.config import ConfigError, UsageError
    from onnxlint.diagnostics import Severity
    from onnxlint.render import render

    # the command line's kept output (a miss: :func:`onnxlint.cli.run` looked it up)
    door = replay.active()
    try:
        files = list(iter_model_files(args.paths))
        if door is not None:  # before any configuration file is read
            door.snapshot([str(f) for f in files])
        configs = ConfigCache(args, validate=False)
        jobs = [(f, configs.for_model(f)) for f in files]
        cached = _cached_reports(args, jobs)
        if any(report is None for _, report in cached):
            # before anything imports onnx: a worker for ORT's level-1 graph starts
            # importing onnxruntime now (only for one model file with an accelerator EP
            # and no cached graph)
            prewarmed.append(prewarm_from_args(args))
            configs.validate()
            # validate EPs and rule options once, before any work, so usage errors exit 2
            from onnxlint.engine import instantiate_rules, resolve_eps

            resolve_eps(jobs[0][1].eps, jobs[0][1])
            instantiate_rules(jobs[0][1])
        elif not jobs:
            configs.validate()
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not files:
        print("onnxlint: error: no .onnx or .onnxtxt files found", file=sys.stderr)
        return EXIT_USAGE
    refused = check_outputs(args, files)
    if refused:
        print(f"onnxlint: error: {refused}", file=sys.stderr)
        return EXIT_USAGE

    quiet = bool(getattr(args, "quiet", False)) or args.no_progress
    show_progress = len(files) > 1 and sys.stderr.isatty() and not quiet
    from onnxlint import progress

    # long work (real sessions under --confirm) says what it is doing, on stderr
    progress.set_listener(None if quiet else progress_line)
    try:
        reports = _lint_all(args, jobs, cached, show_progress)
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        progress.set_listener(None)
    noted = ""  # what this run says on stderr that a re-run says again
    if show_progress:
        noted += "\r\033[K"
        print("\r\033[K", end="", file=sys.stderr)
    bad_dims = _unknown_cli_dims(args, reports)
    if bad_dims:
        print(f"onnxlint: error: {bad_dims}", file=sys.stderr)
        return EXIT_USAGE

    baseline_exit = _apply_baseline(args, reports)
    if isinstance(baseline_exit, int):
        return baseline_exit
    reports = baseline_exit

    fmt = jobs[0][1].format if args.format is None else args.format
    to_terminal = not args.output and sys.stdout.isatty()
    color = fmt in ("table", "concise") and not args.output and use_color(sys.stdout)
    shown = Severity.parse(args.min_severity or ("hint" if fmt == "json" else "info"))
    quiet = bool(getattr(args, "quiet", False))
    if getattr(args, "statistics", False):
        from onnxlint.render.text import render_statistics

        text = render_statistics(reports, min_severity=shown, quiet=quiet)
    else:
        if fmt == "sarif":
            problem = sarif_size_problem(reports, shown)
            if problem is not None:
                level, message = problem
                noted += f"onnxlint: {level}: {message}\n"
                print(f"onnxlint: {level}: {message}", file=sys.stderr)
                if level == "error":
                    return EXIT_USAGE
        width = terminal_width() if to_terminal or "COLUMNS" in os.environ else None
        text = render(
            reports,
            fmt,
            color=color,
            min_severity=shown,
            width=width,
            quiet=quiet,
            sarif_root=args.sarif_root or os.getcwd(),
            partitions=args.sarif_partitions,
            show_nodes=args.show_nodes,
        )
        if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
            append_step_summary(Path(os.environ["GITHUB_STEP_SUMMARY"]), reports, shown)
    if getattr(args, "report", None) == "partitions" and fmt == "table":
        from onnxlint.render.partitions import render_partitions

        text = render_partitions(reports) + "\n" + text
    if getattr(args, "html", None):
        from onnxlint.fsutil import atomic_write_text
        from onnxlint.render.html import render_html

        try:
            atomic_write_text(Path(args.html), render_html(reports))
        except OSError as exc:
            print(
                f"onnxlint: error: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr
            )
            return EXIT_USAGE
    if args.output:
        from onnxlint.fsutil import atomic_write_text

        try:
            atomic_write_text(Path(args.output), text)
        except OSError as exc:
            print(
                f"onnxlint: error: cannot write {args.output}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            quiet_broken_pipe()  # the reader left (| head): the exit code still tells

    code = _exit_code(args, reports, Severity.parse(jobs[0][1].fail_on))
    if door is not None and not args.output:
        slots = [slot for slot, _ in cached]
        door.offer(args, [str(f) for f in files], slots, configs.loaded, text, noted, code)
    return code


def _exit_code(args: argparse.Namespace, reports: list[Any], fail_on: Any) -> int:
    if any(r.fatal for r in reports):
        return EXIT_USAGE
    if getattr(args, "write_baseline", None) or getattr(args, "exit_zero", False):
        return EXIT_OK  # the findings were just accepted, or the caller wants no gate
    return EXIT_FINDINGS if any(r.at_or_above(fail_on) for r in reports) else EXIT_OK


def _unknown_cli_dims(args: argparse.Namespace, reports: list[Any]) -> str | None:
    """Why an ``--assume-dim`` name is a typo (no linted model's inputs declare it), or None."""
    from onnxlint.config import UsageError

    try:
        dims = parse_dims(getattr(args, "assume_dims", None)) or {}
    except UsageError as exc:
        return str(exc)
    if not dims or all(r.fatal for r in reports):
        return None  # nothing loaded: OL001/OL002 say why
    declared = sorted(set().union(*(r.dim_params for r in reports)))
    for name in dims:
        if name not in declared:
            from onnxlint.suggest import did_you_mean

            known = f" (the inputs declare: {', '.join(declared)})" if declared else ""
            return (
                f"--assume-dim: no linted model has an input dim named {name!r}"
                f"{did_you_mean(name, declared) or known}"
            )
    return None


def _apply_baseline(args: argparse.Namespace, reports: list[Any]) -> list[Any] | int:
    """Write the baseline (--write-baseline) or drop the findings it records (--baseline).

    Returns the reports to render, or an exit code when the baseline is unusable.
    """
    if getattr(args, "write_baseline", None):
        from onnxlint.baseline import Baseline

        target = Path(args.write_baseline)
        base = Baseline.from_reports(reports, root=target.parent)
        try:
            base.write(target)
        except OSError as exc:
            print(f"onnxlint: error: cannot write baseline {target}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not getattr(args, "quiet", False):
            print(
                f"onnxlint: recorded {len(base)} finding{'s' if len(base) != 1 else ''} in "
                f"{target}",
                file=sys.stderr,
            )
        return reports
    baseline = getattr(args, "baseline", None)
    if baseline is not None:
        from onnxlint.baseline import Baseline, BaselineError

        if not isinstance(baseline, Baseline):  # a caller that built the namespace by hand
            try:
                baseline = Baseline.load(baseline)
            except BaselineError as exc:
                print(f"onnxlint: error: {exc}", file=sys.stderr)
                return EXIT_USAGE
        result = baseline.filter(reports)
        if not getattr(args, "quiet", False):
            print(result.summary(str(baseline.source)), file=sys.stderr)
        return result.reports
    return reports


def _lint_all(
    args: argparse.Namespace, jobs: list[tuple[Path, Any]], cached: list[Any], show: bool
) -> list[Any]:
    """The reports in the order of ``jobs`` (``cached``: :func:`_cached_reports`, whose
    reports are taken as they are); the progress bar moves in completion order."""
    todo = [k for k, (_, report) in enumerate(cached) if report is None]
    reports = [report for _, report in cached]
    if not todo:
        return reports
    linted = _lint_files(args, [(*jobs[k], cached[k][0]) for k in todo], show)
    for k, report in zip(todo, linted, strict=True):
        reports[k] = report
    return reports


def _lint_files(
    args: argparse.Namespace, jobs: list[tuple[Path, Any, Any]], show: bool
) -> list[Any]:
    """Lint ``(path, config, slot)`` jobs, serially or with ``-j``, in their order."""
    if args.jobs > 1 and len(jobs) > 1:
        return _lint_parallel(args, jobs, show)
    reports = []
    # one ORT level-1 worker for the whole run: it imports onnxruntime once and answers
    # each file's request in turn (a worker that crashed or hung is replaced). One file
    # leaves reuse alone: turning it off would end the worker the head start readied
    # for this very lint (run_lint ends it if the lint does not take it).
    several = len(jobs) > 1
    if several:
        from onnxlint.runtime.processes import set_reuse

        set_reuse(True)
    try:
        for i, (f, c, slot) in enumerate(jobs, 1):
            if show:
                show_progress(i, len(jobs), f)
            reports.append(_lint_one(f, c, slot))
    finally:
        if several:
            set_reuse(False)  # ends the kept worker
    return reports


def _lint_parallel(
    args: argparse.Namespace, jobs: list[tuple[Path, Any, Any]], show: bool
) -> list[Any]:
    """``-j N``: N lint processes forked from this one, the largest files first."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # N lint processes, each waiting for its own ORT level-1 worker rather than running
    # beside it: N busy processes for -j N, not 2N. Forked, they start with what this
    # process has imported (onnx, the engine, the rules) instead of importing it again.
    worker = worker_likely(args, [f for f, _, _ in jobs], jobs[0][1].eps)
    init_args = (worker,)
    with ProcessPoolExecutor(
        max_workers=min(args.jobs, len(jobs)),
        mp_context=_fork_context(),
        initializer=lint_process_init,
        initargs=init_args,
    ) as pool:
        lint_one = _lint_one if getattr(args, "html", None) else _lint_one_for_parent
        futures = {pool.submit(lint_one, *jobs[k]): k for k in schedule(jobs, worker)}
        done: dict[int, Any] = {}
        for i, fut in enumerate(as_completed(futures), 1):
            k = futures[fut]
            done[k] = fut.result()
            if show:
                show_progress(i, len(jobs), jobs[k][0])
        return [done[k] for k in range(len(jobs))]


def schedule(jobs: Sequence[tuple[Any, ...]], worker: bool = False) -> list[int]:
    """The order ``-j N`` hands the files out: the longest lints first, so that the last
    files to finish are short ones and no process is left alone with a large model at the
    end. A lint's length is guessed from its file's size and, when the lints will ask ORT
    for level-1 graphs (``worker``), the weights ORT's constant folding will make
    (:func:`onnxlint.analyses.level1.prewarm.estimated_cost`). Ties (and files that
    cannot be read) keep the command line's order."""
    from onnxlint.analyses.level1.prewarm import estimated_cost

    costs = [estimated_cost(Path(job[0]), worker) for job in jobs]
    return sorted(range(len(jobs)), key=lambda k: -costs[k])


def _fork_context() -> Any:
    """``fork`` on Linux (also on Pythons whose default is another start method): a lint
    process then starts with this process's imports. None (the platform's default)
    elsewhere: macOS's system libraries are not safe to use in a forked child."""
    import multiprocessing

    if not sys.platform.startswith("linux"):
        return None
    return multiprocessing.get_context("fork")


def worker_likely(
    args: argparse.Namespace, files: list[Path], configured_eps: Sequence[str] = ()
) -> bool:
    """Whether the lint processes of ``-j N`` will likely ask ORT for a level-1 graph
    (:func:`onnxlint.analyses.level1.prewarm.likely_cold`); they then start their worker
    at once (:func:`lint_process_init`). Never raises: a guess, not a decision."""
    from onnxlint.analyses.level1.prewarm import likely_cold

    try:
        return likely_cold(
            files,
            [str(e) for e in getattr(args, "eps", None) or configured_eps],
            no_cache=bool(getattr(args, "no_cache", False)),
            assume_dims=[str(d) for d in getattr(args, "assume_dims", None) or []],
        )
    except Exception:  # a head start is an optimization: the run goes on without it
        return False


def lint_process_init(start_worker: bool = False) -> None:
    """A ``-j N`` lint process: its level-1 worker runs while its lint waits (so N lint
    processes keep N cores busy, not 2N) and stays warm for the process's next file.
    ``start_worker``: start that worker now, so that it imports onnxruntime while the
    first lint loads its model (a cold run: every file needs it)."""
    from multiprocessing.util import Finalize

    from onnxlint.analyses.level1 import set_early_start
    from onnxlint.runtime.processes import drop_spare, prewarm, set_reuse

    set_early_start(False)
    set_reuse(True)
    if start_worker:
        from onnxlint.ort_versions import limits_preface

        prewarm(preface=limits_preface())  # it answers ORT's limits first when unknown
    # a pool process exits without atexit handlers: multiprocessing's own finalizers run
    Finalize(None, drop_spare, exitpriority=10)

"""Command line: ``onnxlint PATH... [--ep EP]...`` plus subcommands.

Subcommands live in ``onnxlint/commands/<name>.py``; each module defines
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Exit codes: 0 clean, 1 findings at or above ``--fail-on``, 2 usage error or
unreadable input.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from onnxlint.version import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
MODEL_SUFFIXES = (".onnx", ".onnxtxt")
_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".onnxlint-cache"}


def _command_modules() -> dict[str, ModuleType]:
    import onnxlint.commands as pkg

    mods = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"onnxlint.commands.{info.name}")
        mods[mod.NAME] = mod
    return mods


def _csv(values: Sequence[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(v.strip() for item in values for v in item.split(",") if v.strip())


def add_lint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="model files or folders (searched recursively)"
    )
    p.add_argument(
        "--ep",
        action="append",
        dest="eps",
        metavar="EP",
        help="execution provider in priority order (repeatable): cpu, cuda, tensorrt, qnn, ...",
    )
    p.add_argument(
        "--ep-profile",
        action="append",
        dest="ep_profiles",
        metavar="JSON",
        help="an extra EP capability profile (for an EP onnxlint does not ship)",
    )
    p.add_argument(
        "--format",
        "--output-format",
        dest="format",
        choices=("table", "concise", "json", "sarif", "github"),
        default=None,
        help="table (default), concise (one line per finding), json, sarif, github",
    )
    p.add_argument(
        "--sarif-root",
        metavar="DIR",
        help="SARIF: name models relative to DIR (default: the working folder), as %%SRCROOT%%",
    )
    p.add_argument(
        "--sarif-partitions",
        action="store_true",
        help="SARIF: add the predicted partitions as a run property (large on big models)",
    )
    p.add_argument(
        "--min-severity",
        choices=("error", "warning", "info", "hint"),
        default=None,
        help="list findings at or above this level (default: info; json: hint); "
        "the summary counts the rest",
    )
    p.add_argument(
        "--show-nodes",
        action="store_true",
        help="list every finding, not one row per root cause (table)",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="only the findings: no summary, no notes"
    )
    p.add_argument(
        "--statistics", action="store_true", help="how many findings each rule gave, most first"
    )
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even with findings (2 still means unusable)",
    )
    p.add_argument(
        "--show-settings",
        action="store_true",
        help="print the resolved settings for the first model (config, EPs, versions) and exit",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout"
    )
    p.add_argument(
        "--select", action="append", metavar="CODES", help="codes, prefixes or categories to enable"
    )
    p.add_argument(
        "--ignore",
        action="append",
        metavar="CODES",
        help="codes, prefixes or categories to disable",
    )
    p.add_argument(
        "--extend-ignore", action="append", metavar="CODES", help="add to the configured ignores"
    )
    p.add_argument(
        "--severity", action="append", metavar="CODE=LEVEL", help="override a rule's severity"
    )
    p.add_argument("--fail-on", choices=("error", "warning", "info", "hint"), default=None)
    p.add_argument("--target-ort", metavar="X.Y", help="ONNX Runtime release to check against")
    p.add_argument("--config", metavar="FILE", help="use this onnxlint.toml/pyproject.toml")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    p.add_argument(
        "-j", "--jobs", type=_positive_int, default=1, metavar="N", help="lint N files in parallel"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--report",
        choices=("partitions",),
        help="also print the predicted ORT partitions per EP list and a one-line verdict",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write a self-contained HTML page of the predicted partitions (graph coloured by EP)",
    )
    p.add_argument(
        "--assume-dim",
        action="append",
        dest="assume_dims",
        metavar="NAME=VALUE",
        help="give a symbolic input dimension a value (like a free dimension override; repeatable)",
    )
    p.add_argument(
        "--confirm",
        action="store_true",
        help="create real ORT sessions on each EP (isolated workers) and diff them with the prediction",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="ignore and do not write the caches (--confirm results, ORT's level-1 graph); "
        "also ONNXLINT_NO_CACHE=1",
    )
    p.add_argument(
        "--source",
        metavar="MODEL",
        help="for a compiled (EPContext) model: the source model it must have been compiled from",
    )
    baseline = p.add_mutually_exclusive_group()
    baseline.add_argument(
        "--baseline",
        metavar="FILE",
        type=_baseline_arg,
        help="report only findings that FILE (written by --write-baseline) does not record",
    )
    baseline.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record today's findings in FILE and exit 0 (adopt onnxlint on an existing model zoo)",
    )


def _positive_int(value: str) -> int:
    """``-j``: a whole number of at least 1 (argparse turns the error into exit 2)."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return n


_VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")


def _check_target_ort(value: str | None) -> None:
    """``--target-ort`` must be a release number (the config schema holds files to the same)."""
    if value is None or _VERSION_RE.match(value.strip()):
        return
    from onnxlint.data import load_json
    from onnxlint.engine import UsageError
    from onnxlint.suggest import did_you_mean

    known = [str(r["ort"]) for r in load_json("ort_versions.json")["releases"]]
    raise UsageError(
        f"--target-ort: {value!r} is not an ONNX Runtime version (expected X.Y such as "
        f"{known[-1]}){did_you_mean(value, known)}"
    )


def _parse_severity(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    out = {}
    for item in items:
        code, sep, level = item.partition("=")
        if not sep or level.strip().lower() not in ("error", "warning", "info", "hint"):
            from onnxlint.engine import UsageError

            raise UsageError(f"--severity expects CODE=error|warning|info|hint, got {item!r}")
        out[code.strip()] = level.strip().lower()
    return out


def _parse_dims(items: Sequence[str] | None) -> dict[str, int] | None:
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            from onnxlint.engine import UsageError

            raise UsageError(f"--assume-dim expects NAME=POSITIVE_INT, got {item!r}")
        out[name.strip()] = int(value)
    return out


def iter_model_files(paths: Sequence[str]) -> Iterator[Path]:
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                found += [Path(root) / f for f in files if f.lower().endswith(MODEL_SUFFIXES)]
            yield from sorted(found)
        else:
            yield p  # missing files become OL001 diagnostics


class _ConfigCache:
    def __init__(self, args: argparse.Namespace) -> None:
        from onnxlint import config as cfg

        self.args = args
        self._cfg = cfg
        self._by_file: dict[Path | None, Any] = {}
        self._fixed = None
        self._check_cli()
        if args.isolated:
            self._fixed = cfg.Config()
        elif args.config:
            self._fixed = self._load(Path(args.config))

    def _load(self, path: Path) -> Any:
        from onnxlint.engine import check_selectors

        loaded = self._cfg.load_file(path)
        check_selectors(loaded)
        return loaded

    def _check_cli(self) -> None:
        """The flags' own values, named by flag, before any file is read or model linted."""
        from onnxlint.engine import check_selector_values

        a = self.args
        for flag, values in (
            ("--select", a.select),
            ("--ignore", a.ignore),
            ("--extend-ignore", a.extend_ignore),
        ):
            check_selector_values(flag, _csv(values) or ())
        check_selector_values("--severity", _parse_severity(a.severity) or {}, exact=True)
        _check_target_ort(a.target_ort)

    def for_model(self, path: Path) -> Any:
        base = self._fixed
        if base is None:
            found = self._cfg.find_config_file(path)
            if found not in self._by_file:
                self._by_file[found] = self._load(found) if found else self._cfg.Config()
            base = self._by_file[found]
        return self.apply_cli(base)

    def apply_cli(self, base: Any) -> Any:
        a = self.args
        ignore = _csv(a.ignore)
        extend = _csv(a.extend_ignore)
        if extend:
            ignore = (*(ignore if ignore is not None else base.ignore), *extend)
        severity = _parse_severity(a.severity)
        dims = _parse_dims(getattr(a, "assume_dims", None))
        return base.merged(
            assume_dims={**base.assume_dims, **dims} if dims else None,
            select=_csv(a.select),
            ignore=ignore,
            severity={**base.severity, **severity} if severity else None,
            eps=tuple(a.eps) if a.eps else None,
            ep_profiles=tuple(a.ep_profiles) if a.ep_profiles else None,
            fail_on=a.fail_on,
            target_ort=a.target_ort,
            format=a.format,
            confirm=_confirm_settings(a, base),
        )


def _confirm_settings(a: argparse.Namespace, base: Any) -> dict[str, Any] | None:
    """``[tool.onnxlint.confirm]`` plus --confirm/--no-cache/--source (None: unchanged)."""
    extra: dict[str, Any] = {}
    if getattr(a, "confirm", False):
        extra["mode"] = "run"
    if getattr(a, "no_cache", False):
        extra["cache"] = False
    if getattr(a, "source", None):
        extra["source"] = str(Path(a.source).resolve())
    return {**base.confirm, **extra} if extra else None


def _lint_one(path: Path, config: Any) -> Any:
    from onnxlint.engine import lint

    # every output format shows the partition verdicts, whatever rules are selected
    return lint(path, config=config, path_label=str(path), partition_summary=True)


def run_lint(args: argparse.Namespace) -> int:
    # before anything imports onnx: a worker for ORT's level-1 graph starts importing
    # onnxruntime now (only for one model file with an accelerator EP and no cached graph)
    prewarmed = prewarm_from_args(args)
    try:
        return _run_lint(args)
    finally:
        if prewarmed:
            from onnxlint.runtime.processes import drop_spare

            drop_spare()  # the lint did not need it after all


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


def _run_lint(args: argparse.Namespace) -> int:
    from onnxlint.config import ConfigError
    from onnxlint.diagnostics import Severity
    from onnxlint.engine import UsageError
    from onnxlint.render import render

    try:
        configs = _ConfigCache(args)
        files = list(iter_model_files(args.paths))
        jobs = [(f, configs.for_model(f)) for f in files]
        if jobs:
            # validate EPs and rule options once, before any work, so usage errors exit 2
            from onnxlint.engine import instantiate_rules, resolve_eps

            resolve_eps(jobs[0][1].eps, jobs[0][1])
            instantiate_rules(jobs[0][1])
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not files:
        print("onnxlint: error: no .onnx or .onnxtxt files found", file=sys.stderr)
        return EXIT_USAGE
    refused = _check_outputs(args, files)
    if refused:
        print(f"onnxlint: error: {refused}", file=sys.stderr)
        return EXIT_USAGE

    quiet = bool(getattr(args, "quiet", False)) or args.no_progress
    show_progress = len(files) > 1 and sys.stderr.isatty() and not quiet
    from onnxlint import progress

    # long work (real sessions under --confirm) says what it is doing, on stderr
    progress.set_listener(None if quiet else _progress_line)
    try:
        reports = _lint_all(args, jobs, show_progress)
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        progress.set_listener(None)
    if show_progress:
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
            problem = _sarif_size_problem(reports, shown)
            if problem is not None:
                level, message = problem
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
            _append_step_summary(Path(os.environ["GITHUB_STEP_SUMMARY"]), reports, shown)
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
            _quiet_broken_pipe()  # the reader left (| head): the exit code still tells

    if any(r.fatal for r in reports):
        return EXIT_USAGE
    if getattr(args, "write_baseline", None) or getattr(args, "exit_zero", False):
        return EXIT_OK  # the findings were just accepted, or the caller wants no gate
    fail_on = Severity.parse(jobs[0][1].fail_on)
    return EXIT_FINDINGS if any(r.at_or_above(fail_on) for r in reports) else EXIT_OK


def _sarif_size_problem(reports: list[Any], shown: Any) -> tuple[str, str] | None:
    from onnxlint.render.sarif import result_count_problem

    return result_count_problem(sum(len(r.at_or_above(shown)) for r in reports))


def _append_step_summary(target: Path, reports: list[Any], shown: Any) -> None:
    """Add the full summary to the GitHub step summary (appending is that file's protocol)."""
    from onnxlint.render.github import render_step_summary

    try:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(render_step_summary(reports, shown))
    except OSError as exc:
        print(f"onnxlint: warning: cannot write the step summary {target}: {exc}", file=sys.stderr)


def use_color(stream: Any) -> bool:
    """Colour when the stream is a terminal; ``NO_COLOR`` (non-empty) turns it off and
    ``FORCE_COLOR`` (non-empty) on, in that order (https://no-color.org, force-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` wins; 120 when it cannot be told)."""
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def _quiet_broken_pipe() -> None:
    """After EPIPE on stdout: point it at /dev/null, so that the flush at exit does not
    print a second error (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # no real file behind stdout: nothing will be flushed to the closed pipe


def _unknown_cli_dims(args: argparse.Namespace, reports: list[Any]) -> str | None:
    """Why an ``--assume-dim`` name is a typo (no linted model's inputs declare it), or None."""
    from onnxlint.engine import UsageError

    try:
        dims = _parse_dims(getattr(args, "assume_dims", None)) or {}
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


def _baseline_arg(value: str) -> Any:
    """Load --baseline while parsing, so a bad file is a usage error before any linting."""
    from onnxlint.baseline import Baseline, BaselineError

    try:
        return Baseline.load(value)
    except BaselineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _weights_of(files: list[Path], targets: list[Path]) -> list[Path]:
    """The external-data files of the binary models among ``files`` that an existing
    ``targets`` file could be: only models whose folder holds a target are read (through
    the loader), so a run that writes elsewhere decodes nothing twice."""
    from onnxlint.loader import TEXT_SUFFIXES, load
    from onnxlint.modelfile.external import external_data_files

    existing = [t.resolve() for t in targets if t.is_file()]
    out: list[Path] = []
    for f in files:
        if f.suffix.lower() in TEXT_SUFFIXES:
            continue
        folder = f.resolve().parent
        if not any(folder in t.parents for t in existing):
            continue  # external data lives in the model's folder or below it
        try:
            out += external_data_files(load(f))
        except Exception:  # the lint itself reports what is wrong with the file
            continue
    return out


def _check_outputs(args: argparse.Namespace, files: list[Path]) -> str | None:
    """Why a file this run would write (``-o``, ``--html``, ``--write-baseline``) cannot
    be written, checked before any linting: a folder, a link, a model of this run, a
    read-only folder. None when all can be."""
    from onnxlint.fsutil import check_writable, write_error

    targets = [("", args.output), ("", getattr(args, "html", None))]
    targets.append(("baseline ", getattr(args, "write_baseline", None)))
    named = [Path(target) for _, target in targets if target]
    if named:
        files = [*files, *_weights_of(files, named)]
    for what, target in targets:
        if target:
            try:
                check_writable(Path(target), files)
            except OSError as exc:
                return write_error(f"{what}{target}", exc)
    return None


def _apply_baseline(args: argparse.Namespace, reports: list[Any]) -> list[Any] | int:
    """Write the baseline (--write-baseline) or drop the findings it records (--baseline).

    Returns the reports to render, or an exit code when the baseline is unusable.
    """
    from onnxlint.baseline import Baseline, BaselineError

    if getattr(args, "write_baseline", None):
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


def _lint_all(args: argparse.Namespace, jobs: list[tuple[Path, Any]], show: bool) -> list[Any]:
    """The reports in the order of ``jobs``; the progress bar moves in completion order."""
    if args.jobs > 1 and len(jobs) > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # N lint processes, each waiting for its own ORT level-1 worker rather than
        # running beside it: N busy processes for -j N, not 2N
        with ProcessPoolExecutor(max_workers=args.jobs, initializer=_lint_process_init) as pool:
            futures = {pool.submit(_lint_one, f, c): k for k, (f, c) in enumerate(jobs)}
            done: dict[int, Any] = {}
            for i, fut in enumerate(as_completed(futures), 1):
                k = futures[fut]
                done[k] = fut.result()
                if show:
                    _progress(i, len(jobs), jobs[k][0])
            return [done[k] for k in range(len(jobs))]
    reports = []
    if len(jobs) > 1:
        from onnxlint.analyses.level1 import set_keep_spare

        # each ORT level-1 worker is started while the previous file is linted
        set_keep_spare(True)
    try:
        for i, (f, c) in enumerate(jobs, 1):
            if show:
                _progress(i, len(jobs), f)
            reports.append(_lint_one(f, c))
    finally:
        if len(jobs) > 1:
            from onnxlint.analyses.level1 import set_keep_spare
            from onnxlint.runtime.processes import drop_spare

            set_keep_spare(False)
            drop_spare()
    return reports


def _lint_process_init() -> None:
    from onnxlint.analyses.level1 import set_early_start

    set_early_start(False)


def _progress_line(message: str) -> None:
    """A progress note on its own stderr line (clearing a progress bar drawn there)."""
    clear = "\r\033[K" if sys.stderr.isatty() else ""
    print(f"{clear}onnxlint: {message}", file=sys.stderr, flush=True)


def _progress(i: int, n: int, path: Path) -> None:
    width = 30
    done = int(width * i / n)
    name = str(path)[-40:]
    print(
        f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {name}\033[K",
        end="",
        file=sys.stderr,
        flush=True,
    )


class _Parser(argparse.ArgumentParser):
    """argparse with whole option names only, and a usage error in one line (exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(commands: dict[str, ModuleType]) -> argparse.ArgumentParser:
    listed = {"check": "lint model files and folders (the default: 'onnxlint PATH...')"}
    listed.update({name: mod.HELP for name, mod in commands.items()})
    epilog = "commands:\n" + "\n".join(
        f"  {name:<12} {text}" for name, text in sorted(listed.items())
    )
    p = _Parser(
        prog="onnxlint",
        description="Lint ONNX models for deployment: opsets, shapes, control flow, EP support, partitions.",
        epilog=epilog + "\n\nrun 'onnxlint COMMAND --help' for a command's options; a first "
        "argument spelled like a command is that command (lint a path of that name as "
        "'onnxlint ./NAME' or 'onnxlint check NAME')",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"onnxlint {__version__}")
    add_lint_arguments(p)
    return p


#: the explicit lint subcommand (``lint`` is its older spelling)
LINT_COMMANDS = ("check", "lint")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command line. The first argument names a subcommand when it is spelled exactly
    like one (``onnxlint rules`` lists the rules even in a folder that holds ``rules/``);
    anything else is a lint of the paths given. To lint a path spelled like a subcommand,
    write ``onnxlint ./rules`` or ``onnxlint check rules``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _command_modules()
    try:
        if argv and argv[0] in commands:
            if os.path.exists(argv[0]):
                print(
                    f"onnxlint: note: '{argv[0]}' is a command here; to lint the path, run "
                    f"'onnxlint check {argv[0]}' or 'onnxlint ./{argv[0]}'",
                    file=sys.stderr,
                )
            mod = commands[argv[0]]
            sub = _Parser(prog=f"onnxlint {mod.NAME}", description=mod.HELP)
            mod.add_arguments(sub)
            args = sub.parse_args(argv[1:])
            return int(mod.run(args))
        parser = build_parser(commands)
        if argv and argv[0] in LINT_COMMANDS:
            parser.prog = f"onnxlint {argv[0]}"
            argv = argv[1:]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
        if args.show_settings:
            return _show_settings(args)
        return run_lint(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_broken_pipe()  # `onnxlint rules | head`: the reader has what it wanted
        return EXIT_OK


def _show_settings(args: argparse.Namespace) -> int:
    from onnxlint.config import ConfigError
    from onnxlint.engine import UsageError
    from onnxlint.settings_report import settings_lines

    try:
        lines = settings_lines(args, _ConfigCache(args), list(iter_model_files(args.paths)))
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def run() -> NoReturn:
    """The console entry point: :func:`main`, then exit without tearing the interpreter down.

    Freeing every object of a lint one by one at exit (the model, its indexes, the
    analyses) took 60-150 ms of a 0.5 s static lint; the OS reclaims the memory at
    once. The exit handlers still run first (they end a level-1 worker nobody
    collected) and the output is flushed. ``main()`` stays an ordinary function for
    callers in the same process. Subcommands (the language server's threads among them)
    exit the ordinary way.
    """
    argv = sys.argv[1:]
    if argv and argv[0] in _command_modules():
        raise SystemExit(main())
    code = main()
    import atexit
    import contextlib

    getattr(atexit, "_run_exitfuncs", lambda: None)()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe: nothing more can be said
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())

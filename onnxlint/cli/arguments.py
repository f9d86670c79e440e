"""The lint command's arguments, and the parsing of their values (dims, severities, versions)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from onnxlint.cli.output import EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """argparse with whole option names only, and a usage error in one line (exit 2)."""

    #: builds the epilog when help is printed (the list of commands imports each one)
    epilog_source: Callable[[], str] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def format_help(self) -> str:
        if self.epilog_source is not None:
            self.epilog, self.epilog_source = self.epilog_source(), None
        return super().format_help()


def csv_values(values: Sequence[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(v.strip() for item in values for v in item.split(",") if v.strip())


def add_lint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="model files or folders (searched recursively)"
    )
    _repeated(
        p,
        "--ep",
        "EP",
        "execution provider in priority order (repeatable): cpu, cuda, tensorrt, qnn, ...",
        dest="eps",
    )
    _repeated(
        p,
        "--ep-profile",
        "JSON",
        "an extra EP capability profile (for an EP onnxlint does not ship)",
        dest="ep_profiles",
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
    _flag(
        p,
        "--sarif-partitions",
        help="SARIF: add the predicted partitions as a run property (large on big models)",
    )
    p.add_argument(
        "--min-severity",
        choices=("error", "warning", "info", "hint"),
        default=None,
        help="list findings at or above this level (default: info; json: hint); "
        "the summary counts the rest",
    )
    _flag(p, "--show-nodes", help="list every finding, not one row per root cause (table)")
    _flag(p, "-q", "--quiet", help="only the findings: no summary, no notes")
    _flag(p, "--statistics", help="how many findings each rule gave, most first")
    _flag(p, "--exit-zero", help="exit 0 even with findings (2 still means unusable)")
    _flag(
        p,
        "--show-settings",
        help="print the resolved settings for the first model (config, EPs, versions) and exit",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout"
    )
    _repeated(p, "--select", "CODES", "codes, prefixes or categories to enable")
    _repeated(p, "--ignore", "CODES", "codes, prefixes or categories to disable")
    _repeated(p, "--extend-ignore", "CODES", "add to the configured ignores")
    _repeated(p, "--severity", "CODE=LEVEL", "override a rule's severity")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "hint"), default=None)
    p.add_argument("--target-ort", metavar="X.Y", help="ONNX Runtime release to check against")
    p.add_argument("--config", metavar="FILE", help="use this onnxlint.toml/pyproject.toml")
    _flag(p, "--isolated", help="ignore configuration files")
    p.add_argument(
        "-j", "--jobs", type=_positive_int, default=1, metavar="N", help="lint N files in parallel"
    )
    _flag(p, "--no-progress", help="no progress bar on stderr")
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
    _repeated(
        p,
        "--assume-dim",
        "NAME=VALUE",
        "give a symbolic input dimension a value (like a free dimension override; repeatable)",
        dest="assume_dims",
    )
    _flag(
        p,
        "--confirm",
        help="create real ORT sessions on each EP (isolated workers) and diff them with the prediction",
    )
    _flag(
        p,
        "--no-cache",
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


def _flag(p: argparse.ArgumentParser, *names: str, help: str) -> None:
    """An on/off option (``store_true``)."""
    p.add_argument(*names, action="store_true", help=help)


def _repeated(
    p: argparse.ArgumentParser, name: str, metavar: str, help: str, dest: str | None = None
) -> None:
    """An option that may be given more than once, its values kept in order (``append``)."""
    # dest None: argparse names it after the option, as when it is not given
    p.add_argument(name, action="append", dest=dest, metavar=metavar, help=help)


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


def check_target_ort(value: str | None) -> None:
    """``--target-ort`` must be a release number (the config schema holds files to the same)."""
    if value is None or _VERSION_RE.match(value.strip()):
        return
    from onnxlint.config import UsageError
    from onnxlint.data import load_json
    from onnxlint.suggest import did_you_mean

    known = [str(r["ort"]) for r in load_json("ort_versions.json")["releases"]]
    raise UsageError(
        f"--target-ort: {value!r} is not an ONNX Runtime version (expected X.Y such as "
        f"{known[-1]}){did_you_mean(value, known)}"
    )


def parse_severity(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    out = {}
    for item in items:
        code, sep, level = item.partition("=")
        if not sep or level.strip().lower() not in ("error", "warning", "info", "hint"):
            from onnxlint.config import UsageError

            raise UsageError(f"--severity expects CODE=error|warning|info|hint, got {item!r}")
        out[code.strip()] = level.strip().lower()
    return out


def parse_dims(items: Sequence[str] | None) -> dict[str, int] | None:
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            from onnxlint.config import UsageError

            raise UsageError(f"--assume-dim expects NAME=POSITIVE_INT, got {item!r}")
        out[name.strip()] = int(value)
    return out


def _baseline_arg(value: str) -> Any:
    """Load --baseline while parsing, so a bad file is a usage error before any linting."""
    from onnxlint.baseline import Baseline, BaselineError

    try:
        return Baseline.load(value)
    except BaselineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

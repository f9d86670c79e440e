"""The lint command's arguments, and the parsing of their values (dims, severities, versions)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any


def csv_values(values: Sequence[str] | None) -> tuple[str, ...] | None:
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


def check_target_ort(value: str | None) -> None:
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


def parse_severity(items: Sequence[str] | None) -> dict[str, str] | None:
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


def parse_dims(items: Sequence[str] | None) -> dict[str, int] | None:
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


def _baseline_arg(value: str) -> Any:
    """Load --baseline while parsing, so a bad file is a usage error before any linting."""
    from onnxlint.baseline import Baseline, BaselineError

    try:
        return Baseline.load(value)
    except BaselineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

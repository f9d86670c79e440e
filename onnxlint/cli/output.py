"""What the command line shows and returns: exit codes, colour and width, progress, and
the CI side outputs (the GitHub step summary, SARIF's upload limit)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # this module is imported before a replayed output is printed
    from pathlib import Path
    from typing import Any

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def sarif_size_problem(reports: list[Any], shown: Any) -> tuple[str, str] | None:
    from onnxlint.render.sarif import result_count_problem

    return result_count_problem(sum(len(r.at_or_above(shown)) for r in reports))


def append_step_summary(target: Path, reports: list[Any], shown: Any) -> None:
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


def quiet_broken_pipe() -> None:
    """After EPIPE on stdout: point it at /dev/null, so that the flush at exit does not
    print a second error (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # no real file behind stdout: nothing will be flushed to the closed pipe


def progress_line(message: str) -> None:
    """A progress note on its own stderr line (clearing a progress bar drawn there)."""
    clear = "\r\033[K" if sys.stderr.isatty() else ""
    print(f"{clear}onnxlint: {message}", file=sys.stderr, flush=True)


def show_progress(i: int, n: int, path: Path) -> None:
    width = 30
    done = int(width * i / n)
    name = str(path)[-40:]
    print(
        f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {name}\033[K",
        end="",
        file=sys.stderr,
        flush=True,
    )

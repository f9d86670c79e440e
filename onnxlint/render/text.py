"""Human-readable output: a table per file (tabulate) and a plain list for assertion messages."""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Sequence

import tabulate as tabulate_module
from tabulate import tabulate

from onnxlint.diagnostics import Diagnostic, Severity
from onnxlint.report import Report

_COLORS = {
    Severity.ERROR: "\033[31m",
    Severity.WARNING: "\033[33m",
    Severity.INFO: "\033[36m",
    Severity.HINT: "\033[2m",
}
_RESET = "\033[0m"


def _where(d: Diagnostic) -> str:
    return d.location.describe()


_HEADERS = ["code", "severity", "where", "ep", "message"]
_WIDTHS: list[int | None] = [None, None, 40, 14, 80]


class _PlainWrap(textwrap.TextWrapper):
    """tabulate's wrapping for plain ASCII text: a long word is cut at the width, hyphens or not."""

    def _handle_long_word(
        self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int
    ) -> None:
        space_left = 1 if width < 1 else width - cur_len
        if space_left > 0:
            chunk = reversed_chunks[-1]
            cur_line.append(chunk[:space_left])
            reversed_chunks[-1] = chunk[space_left:]
        elif not cur_line:
            cur_line.append(reversed_chunks.pop())


def _wrap_plain(wrapper: _PlainWrap, line: str) -> list[str]:
    """``wrapper.wrap(line)`` for plain ASCII, by greedy filling when that is provably the
    same: words separated by single spaces, no hyphen (TextWrapper also breaks after
    hyphens), no word longer than the width (those are cut). Everything else goes to the
    wrapper. Wrapping took most of the table's time on a large report."""
    width = wrapper.width
    words = line.split(" ")
    if "-" in line or "" in words or max(map(len, words)) > width:
        return wrapper.wrap(line)
    lines: list[str] = []
    cur: list[str] = []
    used = 0
    for w in words:
        if cur and used + 1 + len(w) > width:
            lines.append(" ".join(cur))
            cur, used = [w], len(w)
        else:
            used += len(w) + (1 if cur else 0)
            cur.append(w)
    if cur:
        lines.append(" ".join(cur))
    return lines


def _plain(cell: str) -> bool:
    return cell.isascii() and all(line.isprintable() for line in cell.splitlines())


def _table(rows: list[list[str]]) -> str:
    """The findings table, its cells wrapped and laid out here rather than by tabulate.

    tabulate's own wrapping measures every chunk through an ANSI-stripping regex and
    wcwidth, and its layout pads every cell the same way: together most of the time of a
    100k-node lint (docs/performance.md). Plain ASCII cells go through the standard
    wrapper with tabulate's long-word rule (the same lines), and only when longer than
    the column; other cells through tabulate's wrapper. Tables whose cells are all plain
    ASCII (the usual case), or any table when wcwidth is not installed, are laid out in
    tabulate's "simple" format here, byte for byte; other tables by tabulate itself,
    which then measures wide characters.
    """
    custom = getattr(tabulate_module, "_CustomTextWrap", None)
    if custom is None:  # pragma: no cover - a tabulate without it: its own wrapping
        return tabulate(rows, headers=_HEADERS, tablefmt="simple", maxcolwidths=_WIDTHS)
    plain = {i: _PlainWrap(width=w) for i, w in enumerate(_WIDTHS) if w is not None}
    wrapped = []
    all_plain = True
    for row in rows:
        new = list(row)
        for i, wrapper in plain.items():
            cell = row[i]
            width = wrapper.width
            if _plain(cell):
                if "\n" not in cell and len(cell) <= width and cell.strip() == cell:
                    continue  # fits: the wrapper would return it unchanged
                wrap = functools.partial(_wrap_plain, wrapper)
            else:
                all_plain = False
                wrap = custom(width=width).wrap
            new[i] = "\n".join("\n".join(wrap(line)) for line in cell.splitlines() if line.strip())
        all_plain = all_plain and all(_plain(_ANSI.sub("", c)) for c in (new[0], new[1], new[3]))
        wrapped.append(new)
    # without wcwidth, tabulate measures every cell with len() too (after removing colours)
    if all_plain or getattr(tabulate_module, "wcwidth", None) is None:
        return _simple_layout(_HEADERS, wrapped)
    # every column is text: no number parsing (it cost seconds on large reports)
    return tabulate(wrapped, headers=_HEADERS, tablefmt="simple", disable_numparse=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _simple_layout(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate's "simple" format for left-aligned ASCII text cells (ANSI colours allowed):
    headers padded by two, two spaces between columns, multi-line cells stacked, every
    cell stripped and every output line right-stripped."""

    def width(cell: str) -> int:
        return len(_ANSI.sub("", cell)) if "\x1b" in cell else len(cell)

    widths = [len(h) + 2 for h in headers]
    # tabulate strips a left-aligned cell as a whole (not line by line)
    split = [[cell.strip().split("\n") for cell in row] for row in rows]
    for row in split:
        for i, lines in enumerate(row):
            w = max(width(line) for line in lines)
            if w > widths[i]:
                widths[i] = w

    def line(cells: list[str]) -> str:
        return "  ".join(
            c + " " * (w - width(c)) for c, w in zip(cells, widths, strict=True)
        ).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    for row in split:
        height = max(len(lines) for lines in row)
        if height == 1:
            out.append(line([lines[0] for lines in row]))
            continue
        for k in range(height):
            out.append(line([lines[k] if k < len(lines) else "" for lines in row]))
    return "\n".join(out)


def render_table(reports: Sequence[Report], color: bool = False) -> str:
    out: list[str] = []
    totals = {s: 0 for s in Severity}
    for report in reports:
        out.append(report.path or "<model>")
        if report.diagnostics:
            rows = []
            for d in report.diagnostics:
                sev = d.severity.label
                if color:
                    sev = f"{_COLORS[d.severity]}{sev}{_RESET}"
                fix = f"\nfix: {d.fix.title}" if d.fix else ""
                rows.append([d.code, sev, _where(d), d.ep or "", d.message + fix])
                totals[d.severity] += 1
            out.append(_table(rows))
        else:
            out.append("  no findings")
        out.append("")
    files = len(reports)
    unreadable = sum(1 for r in reports if r.fatal)
    parts = [
        f"{totals[s]} {s.label}{'s' if totals[s] != 1 else ''}"
        for s in sorted(Severity, reverse=True)
    ]
    summary = f"Checked {files} model{'s' if files != 1 else ''}: " + ", ".join(parts)
    if unreadable:
        summary += f"; {unreadable} could not be loaded"
    out.append(summary)
    return "\n".join(out) + "\n"


def render_plain(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """One finding per line with its fix: used for assertion messages and logs."""
    lines = []
    for report in reports:
        for d in report.diagnostics:
            if d.severity < min_severity:
                continue
            ep = f" [{d.ep}]" if d.ep else ""
            lines.append(
                f"{report.path or '<model>'}: {_where(d)}: {d.severity.label} {d.code}{ep} {d.message}"
            )
            if d.fix:
                lines.append(
                    f"    fix: {d.fix.title}" + (f" ({d.fix.command})" if d.fix.command else "")
                )
        if report.fatal and not report.diagnostics:
            lines.append(f"{report.path or '<model>'}: could not be loaded")
    return "\n".join(lines)

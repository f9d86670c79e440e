"""Human-readable output: a table per file (tabulate) and a plain list for assertion messages."""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Sequence
from types import ModuleType

from onnxlint.diagnostics import Diagnostic, Severity
from onnxlint.report import Report, plain_text

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


class _TokenWrap(_PlainWrap):
    """Wrapping that never cuts an identifier: no break at hyphens (``qnn-htp``,
    ``dynamic-input-shape``); a word longer than the column breaks only after a ``/``
    (a graph path, a file path), else it keeps its own line and widens the column."""

    def __init__(self, width: int) -> None:
        super().__init__(width=width, break_on_hyphens=False)

    def _handle_long_word(
        self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int
    ) -> None:
        chunk = reversed_chunks[-1]
        space_left = width - cur_len
        if space_left < 1 and cur_line:
            return  # the line is full: the word starts the next one
        cut = chunk.rfind("/", 0, max(space_left, 1)) + 1
        if 0 < cut < len(chunk):
            cur_line.append(chunk[:cut])
            reversed_chunks[-1] = chunk[cut:]
        elif not cur_line:
            cur_line.append(reversed_chunks.pop())


def column_widths(rows: Sequence[Sequence[str]], total: int | None) -> list[int | None]:
    """Wrap widths of the table's columns for a terminal ``total`` characters wide (None:
    the fixed widths). Code, severity and EP keep their own width; the place and the
    message share the rest, the place taking what its longest cell needs up to a third."""
    if total is None:
        return list(_WIDTHS)

    def natural(i: int) -> int:
        cells = (line for row in rows for line in row[i].split("\n"))
        return max([len(_HEADERS[i]) + 2, *map(len, cells)])

    fixed = natural(0) + natural(1) + natural(3) + 2 * (len(_HEADERS) - 1)
    rest = max(total - fixed, 40)
    # the longest piece the token wrapper cannot break (it breaks at blanks and after '/')
    unbreakable = max(
        (len(piece) for row in rows for piece in re.split(r"\s+|(?<=/)", row[2])), default=0
    )
    where = min(natural(2), max(20, rest * 2 // 5, unbreakable))
    return [None, None, where, None, max(24, rest - where)]


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


def _table(
    rows: list[list[str]], widths: Sequence[int | None] = _WIDTHS, keep_tokens: bool = False
) -> str:
    """The findings table, its cells wrapped and laid out here rather than by tabulate.

    tabulate's own wrapping measures every chunk through an ANSI-stripping regex and
    wcwidth, and its layout pads every cell the same way: together most of the time of a
    100k-node lint (docs/performance.md). Plain ASCII cells go through the standard
    wrapper with tabulate's long-word rule (the same lines), and only when longer than
    the column; other cells through tabulate's wrapper. Tables whose cells are all plain
    ASCII (the usual case), or any table when wcwidth is not installed, are laid out in
    tabulate's "simple" format here, byte for byte; other tables by tabulate itself,
    which then measures wide characters. ``keep_tokens``: wrap with :class:`_TokenWrap`
    (what the CLI shows) instead of tabulate's rule, which cuts long words anywhere.
    """
    make: type[_PlainWrap] = _TokenWrap if keep_tokens else _PlainWrap
    plain = {i: make(width=w) for i, w in enumerate(widths) if w is not None}
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
                custom = getattr(_tabulate(), "_CustomTextWrap", None)
                if custom is None:  # pragma: no cover - tabulate < 0.9: its own wrapping
                    return str(
                        _tabulate().tabulate(
                            rows, headers=_HEADERS, tablefmt="simple", maxcolwidths=list(widths)
                        )
                    )
                extra = {"break_on_hyphens": False, "break_long_words": False}
                wrap = custom(width=width, **(extra if keep_tokens else {})).wrap
            new[i] = "\n".join("\n".join(wrap(line)) for line in cell.splitlines() if line.strip())
        all_plain = all_plain and all(_plain(_ANSI.sub("", c)) for c in (new[0], new[1], new[3]))
        wrapped.append(new)
    # without wcwidth, tabulate measures every cell with len() too (after removing colours)
    if all_plain or getattr(_tabulate(), "wcwidth", None) is None:
        return _simple_layout(_HEADERS, wrapped)
    # every column is text: no number parsing (it cost seconds on large reports)
    return str(
        _tabulate().tabulate(wrapped, headers=_HEADERS, tablefmt="simple", disable_numparse=True)
    )


def _tabulate() -> ModuleType:
    """tabulate, imported for the first table with a cell that is not plain ASCII (a table
    of plain cells, the usual one, is laid out here: a lint need not import it)."""
    import tabulate

    return tabulate


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


def _rows(
    report: Report, min_severity: Severity, show_nodes: bool, color: bool
) -> tuple[list[list[str]], int]:
    """The table rows of one report (one per root cause unless ``show_nodes``) and how many
    findings the cause rows stand for."""
    from onnxlint.causes import shown

    rows: list[list[str]] = []
    grouped = 0
    last_fix: tuple[str, str] | None = None
    for item in shown(report, min_severity, show_nodes):
        sev = item.severity.label
        if color:
            sev = f"{_COLORS[item.severity]}{sev}{_RESET}"
        fix = f"\nfix: {item.fix.title}" if item.fix else ""
        if item.fix and last_fix == (item.code, item.fix.title):
            # one rule's same remedy, row after row (each dynamic graph input): said once
            fix = "\nfix: as above"
        last_fix = (item.code, item.fix.title) if item.fix else None
        rows.append([item.code, sev, item.where(), item.ep or "", item.message + fix])
        grouped += len(item.group.members) if item.group else 0
    return rows, grouped


def render_table(
    reports: Sequence[Report],
    color: bool = False,
    *,
    min_severity: Severity = Severity.HINT,
    width: int | None = None,
    quiet: bool = False,
    show_nodes: bool = False,
) -> str:
    """A table per model, then the summary. Each model leads with its verdict per EP;
    findings sharing a root cause are one row (``show_nodes``: a row per finding).
    Findings below ``min_severity`` are counted in the summary but not listed; ``width``:
    fit a terminal that wide; ``quiet``: only models with findings shown, no summary."""
    from onnxlint.render.partitions import verdict_lines

    out: list[str] = []
    grouped = 0
    for report in reports:
        rows, n = _rows(report, min_severity, show_nodes, color)
        grouped += n
        if quiet and not rows and not report.fatal:
            continue
        out.append(report.path or "<model>")
        if not quiet:
            for line in verdict_lines(report):
                wrap = _TokenWrap(width=max((width or 10**6) - 4, 20))
                out += [
                    f"  {part}" if k == 0 else f"    {part}"
                    for k, part in enumerate(wrap.wrap(line))
                ]
        if rows:
            out.append(_table(rows, column_widths(rows, width), keep_tokens=True))
        elif report.diagnostics:
            out.append(f"  no findings at or above {min_severity.label}")
        else:
            out.append("  no findings")
        out.append("")
    if not quiet:
        line = summary_line(reports, min_severity)
        if grouped:
            line += f"; {grouped} findings shown by their root causes (--show-nodes lists each)"
        out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def summary_line(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """``Checked 3 models: 1 error, 2 warnings, 0 infos, 285 hints (285 hidden: ...)``."""
    totals = {s: 0 for s in Severity}
    for report in reports:
        for d in report.diagnostics:
            totals[d.severity] += 1
    files = len(reports)
    unreadable = sum(1 for r in reports if r.fatal)
    parts = [
        f"{totals[s]} {s.label}{'s' if totals[s] != 1 else ''}"
        for s in sorted(Severity, reverse=True)
    ]
    summary = f"Checked {files} model{'s' if files != 1 else ''}: " + ", ".join(parts)
    hidden = [s for s in Severity if s < min_severity and totals[s]]
    if hidden:
        n = sum(totals[s] for s in hidden)
        summary += f" ({n} not shown: --min-severity {min(hidden).label} shows them)"
    if unreadable:
        summary += f"; {unreadable} could not be loaded"
    return summary


def render_concise(
    reports: Sequence[Report],
    color: bool = False,
    *,
    min_severity: Severity = Severity.HINT,
    quiet: bool = False,
    show_nodes: bool = False,
) -> str:
    """One line per root cause or finding (``path: where: CODE severity [ep] message``),
    then the summary."""
    from onnxlint.causes import shown

    lines = []
    for report in reports:
        for item in shown(report, min_severity, show_nodes):
            sev = item.severity.label
            if color:
                sev = f"{_COLORS[item.severity]}{sev}{_RESET}"
            ep = f" [{item.ep}]" if item.ep else ""
            text = item.message.replace("\n", "; ")
            lines.append(
                f"{report.path or '<model>'}: {item.where()}: {item.code} {sev}{ep} {text}"
            )
        if report.fatal and not report.diagnostics:
            lines.append(f"{report.path or '<model>'}: could not be loaded")
    if not quiet:
        lines.append(summary_line(reports, min_severity))
    return "\n".join(lines) + ("\n" if lines else "")


def render_statistics(
    reports: Sequence[Report], *, min_severity: Severity = Severity.HINT, quiet: bool = False
) -> str:
    """How many findings each rule gave (most first): ``  107  OL504  warning  ep-...``."""
    counts: dict[tuple[str, str, Severity], int] = {}
    for report in reports:
        for d in report.diagnostics:
            if d.severity >= min_severity:
                key = (d.code, d.rule, d.severity)
                counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0][2], kv[0][0]))
    width = len(str(ranked[0][1])) if ranked else 1
    lines = [f"{n:>{width}}  {code:<6} {sev.label:<8} {rule}" for (code, rule, sev), n in ranked]
    if not quiet:
        lines.append(summary_line(reports, min_severity))
    return "\n".join(lines) + ("\n" if lines else "")


def render_plain(reports: Sequence[Report], min_severity: Severity = Severity.HINT) -> str:
    """One finding per line with its fix: used for assertion messages and logs."""
    return plain_text(reports, min_severity)

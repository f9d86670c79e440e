"""Editor features as plain functions of a ``ModelState``: no server, no I/O.

Each function takes the linted state (report, index, text map) and LSP
positions and returns ``lsprotocol`` values; ``server.py`` only forwards
requests here. Diagnostics become LSP diagnostics only here (ranges from the
text map), as the house style asks: a finding knows its node, never its line.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlint import causes
from onnxlint.diagnostics import Category, Diagnostic, Location, Severity
from onnxlint.index import NodeRef
from onnxlint.lsp.sourcemap import SourceMap, Token, tensor_elements
from onnxlint.lsp.workspace import ModelState, path_to_uri

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SOURCE = "onnxlint"
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
    Severity.HINT: lsp.DiagnosticSeverity.Hint,
}
_PARSE_POS = re.compile(r"line:\s*(\d+)\s*column:\s*(\d+)")


# ---------------------------------------------------------------------------
# Diagnostics


def _line_range(smap: SourceMap | None, line: int, start: int = 0) -> lsp.Range:
    end = start + 1
    if smap is not None:
        lines = smap.lines
        if 0 <= line < len(lines):
            end = max(len(lines[line]), start + 1)
    return lsp.Range(lsp.Position(line, start), lsp.Position(line, end))


def diagnostic_range(d: Diagnostic, smap: SourceMap | None, *, is_text: bool) -> lsp.Range:
    """Where a finding sits in a text: the node's line, else the tensor's, else the graph's."""
    loc = d.location
    if d.code == "OL006" and is_text:
        m = _PARSE_POS.search(d.message)
        if m:
            line, col = max(int(m.group(1)) - 1, 0), max(int(m.group(2)) - 1, 0)
            return lsp.Range(lsp.Position(line, col), lsp.Position(line, col + 1))
    if smap is None:
        return _line_range(None, 0)
    if loc.node_path and loc.node_path in smap.nodes:
        entry = smap.nodes[loc.node_path]
        if loc.tensor:
            tok = smap.token_in_node(loc.node_path, loc.tensor)
            if tok is not None:
                return lsp.Range(lsp.Position(tok.line, tok.start), lsp.Position(tok.line, tok.end))
        return _line_range(smap, entry.line, entry.start)
    if loc.tensor:
        tok = smap.definition_of(loc.tensor, loc.graph)
        if tok is not None:
            return lsp.Range(lsp.Position(tok.line, tok.start), lsp.Position(tok.line, tok.end))
    graph = smap.graphs.get(loc.graph)
    if graph is not None:
        return _line_range(smap, graph.line)
    return _line_range(smap, 0)


def rule_doc_uri(code: str, docs_dir: Path | None) -> str | None:
    """The page documenting ``code``: a local Markdown file the server wrote, if any."""
    if docs_dir is None:
        return None
    key = (code, docs_dir)
    if key not in _DOC_URIS:
        # the server writes the pages once at start-up: one stat per code, not per finding
        page = docs_dir / f"{code}.md"
        _DOC_URIS[key] = path_to_uri(page) if page.is_file() else None
    return _DOC_URIS[key]


_DOC_URIS: dict[tuple[str, Path], str | None] = {}


def to_lsp(
    d: Diagnostic,
    smap: SourceMap | None,
    *,
    is_text: bool,
    model_uri: str,
    docs_dir: Path | None = None,
    with_location_prefix: bool = False,
    view_uri: str | None = None,
) -> lsp.Diagnostic:
    """One onnxlint finding as an LSP diagnostic, with ``data`` for code actions.

    ``view_uri``: the finding is published on a binary model's file, whose ranges
    are those of ``smap``, the model's graph view; related locations then point
    into that view, the first one at the finding itself, so that opening it in
    the Problems panel lands on the node's line.
    """
    loc = d.location
    message = d.message
    if with_location_prefix and (loc.node_index is not None or loc.tensor or loc.graph != "main"):
        message = f"{loc.describe()}: {message}"
    if d.ep:
        message = f"[{d.ep}] {message}"
    if d.disproved:
        message += f"\n{d.disproved_text()}"
    if d.fix is not None:
        message += f"\nFix: {d.fix.title}"
    href = rule_doc_uri(d.code, docs_dir)
    where = diagnostic_range(d, smap, is_text=is_text)
    related = []
    if smap is not None:
        if view_uri is not None:
            related.append(
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=view_uri, range=where),
                    message=f"{loc.describe()} in the graph view",
                )
            )
        for r in d.related:
            fake = Diagnostic(d.code, d.rule, d.category, d.severity, "", location=r)
            related.append(
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(
                        uri=view_uri or model_uri,
                        range=diagnostic_range(fake, smap, is_text=is_text),
                    ),
                    message=r.describe(),
                )
            )
    return lsp.Diagnostic(
        range=where,
        message=message,
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning),
        code=d.code,
        code_description=lsp.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related or None,
        data={
            "code": d.code,
            "rule": d.rule,
            "category": d.category.value,
            "node_path": loc.node_path,
            "node_name": loc.node_name,
            "graph": loc.graph,
            "tensor": loc.tensor,
            "ep": d.ep,
            "fix": d.fix.to_dict() if d.fix else None,
            "model_uri": model_uri,
        },
    )


def _range_json(r: lsp.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def diagnostic_json(d: lsp.Diagnostic) -> dict[str, Any]:
    """``d`` as the JSON the LSP wire format wants (what cattrs' unstructuring gives).

    Written out by hand because the generic unstructuring took ~30 us per finding:
    a third of a second, on the server's loop, for the ~9,000 findings of a
    10k-node model linted for six EPs. ``data`` holds JSON values already.
    """
    out: dict[str, Any] = {"range": _range_json(d.range), "message": d.message}
    if d.severity is not None:
        out["severity"] = int(d.severity)
    if d.code is not None:
        out["code"] = d.code
    if d.code_description is not None:
        out["codeDescription"] = {"href": d.code_description.href}
    if d.source is not None:
        out["source"] = d.source
    if d.tags is not None:
        out["tags"] = [int(t) for t in d.tags]
    if d.related_information is not None:
        out["relatedInformation"] = [
            {
                "location": {"uri": r.location.uri, "range": _range_json(r.location.range)},
                "message": r.message,
            }
            for r in d.related_information
        ]
    if d.data is not None:
        out["data"] = d.data
    return out


def is_quiet(d: Diagnostic) -> bool:
    """Hints and export-hygiene information: worth a dotted underline, not a Problems entry."""
    return d.severity == Severity.HINT or (
        d.severity == Severity.INFO and d.category == Category.EXPORT_HYGIENE
    )


#: related locations a cause's diagnostic lists (its message counts the rest)
RELATED_MAX = 50


def cause_finding(g: causes.CauseGroup) -> Diagnostic:
    """A root cause as one finding: at the cause, with the nodes it costs as related
    locations (the first :data:`RELATED_MAX`)."""
    return replace(
        g.head,
        location=g.where,
        severity=g.severity,
        message=g.message(),
        fix=g.fix(),
        related=tuple(g.nodes[:RELATED_MAX]),
        disproved=None,
    )


def diagnostics_for(
    state: ModelState,
    *,
    view: str,
    docs_dir: Path | None = None,
    view_uri: str | None = None,
    show_hints: bool = True,
    per_rule: int = 0,
) -> list[lsp.Diagnostic]:
    """The LSP diagnostics of a model for one of its URIs.

    ``view`` is ``text`` (a .onnxtxt document: exact ranges), ``file`` (a binary
    .onnx file: the node named in the message; once the graph view is rendered,
    each finding carries its node's range in the view and, with ``view_uri``, a
    related location there) or ``graph`` (the graph view: each finding on its
    node's line). ``file`` never renders the view.

    What the Problems panel lists: each root cause shared by several findings
    (:func:`onnxlint.causes.group`) once, at the cause, with its nodes as related
    information; the findings it stands for are hints on their nodes. Without ``show_hints``, hints and export-hygiene
    information are published as hints (VS Code shows those in the editor only);
    with ``per_rule``, the findings of one rule and EP after the first
    ``per_rule`` are hints too, and the last one listed says how many follow, so
    a cause repeated on 10,000 nodes does not flood the panel (the hover still
    shows every node's findings).
    """
    rendered = view != "file" or not state.view_pending
    smap = state.source if rendered else None
    findings = state.report.diagnostics
    groups = causes.group(state.report)
    grouped = {id(d) for g in groups for d in g.members}

    def convert(d: Diagnostic) -> lsp.Diagnostic:
        return to_lsp(
            d,
            smap,
            is_text=view == "text",
            model_uri=state.uri,
            docs_dir=docs_dir,
            with_location_prefix=view == "file",
            view_uri=view_uri if view == "file" else None,
        )

    # one diagnostic per root cause, at the cause, its nodes as related information;
    # the findings it stands for stay on their nodes as hints (not in the Problems panel)
    out = []
    for g in groups:
        diag = convert(cause_finding(g))
        if isinstance(diag.data, dict):
            diag.data["root_cause"] = {**g.cause.to_dict(), "nodes": len(g.nodes)}
        out.append(diag)
    totals = Counter(
        (d.code, d.ep)
        for d in findings
        if id(d) not in grouped and not (is_quiet(d) and not show_hints)
    )
    listed: Counter[tuple[str, str | None]] = Counter()
    for d in findings:
        diag = convert(d)
        if id(d) in grouped or (not show_hints and is_quiet(d)):
            diag.severity = lsp.DiagnosticSeverity.Hint
        elif per_rule > 0:
            key = (d.code, d.ep)
            listed[key] += 1
            if listed[key] > per_rule:
                diag.severity = lsp.DiagnosticSeverity.Hint
            elif listed[key] == per_rule and totals[key] > per_rule:
                more = totals[key] - per_rule
                diag.message += f"\n(+{more:,} more like this on other nodes, shown as hints)"
        out.append(diag)
    return out + [
        lsp.Diagnostic(
            range=_line_range(smap, 0),
            message=note,
            severity=lsp.DiagnosticSeverity.Warning,
            source=SOURCE,
            code="settings",
        )
        for note in state.notes
        if view != "graph"
    ]


def diagnostics_on_lines(
    state: ModelState, rng: lsp.Range, *, view: str, docs_dir: Path | None = None
) -> list[lsp.Diagnostic]:
    """The findings on the lines ``rng`` spans (``text`` or ``graph`` view).

    The editor sends the diagnostics under the cursor with a code action
    request, and a finding underlines one token: this lets its quick fixes be
    offered anywhere on the node's line. The line index is built once per state.
    """
    smap = state.source
    if smap is None or view not in ("text", "graph"):
        return []
    index = state.line_index.get(view)
    if index is None:
        index = {}
        for i, d in enumerate(state.report.diagnostics):
            line = diagnostic_range(d, smap, is_text=view == "text").start.line
            index.setdefault(line, []).append(i)
        state.line_index[view] = index
    findings = state.report.diagnostics
    return [
        to_lsp(findings[i], smap, is_text=view == "text", model_uri=state.uri, docs_dir=docs_dir)
        for line in range(rng.start.line, rng.end.line + 1)
        for i in index.get(line, ())
    ]


# ---------------------------------------------------------------------------
# Hover


def _node_ref(state: ModelState, path: str) -> NodeRef | None:
    return state.index.node_by_path(path) if state.index is not None else None


def _node_findings(state: ModelState, path: str) -> list[Diagnostic]:
    return [d for d in state.report.diagnostics if d.location.node_path == path]


def predicted_partitions(state: ModelState) -> list[tuple[int, str, list[str], str | None]]:
    """(number, EP, source node paths, why it would fail) per predicted partition.

    ``Report.partitions`` holds the partition analysis' plans (one per graph level);
    the plan the deployment prediction uses (``stats['partition_level']``) is shown,
    with its nodes mapped back to the user's node paths.
    """
    plans = list(state.report.partitions)
    if not plans:
        return []
    level = state.report.stats.get("partition_level")
    plan = next((p for p in plans if _get(p, "level") == level), plans[0])
    parts = _get(plan, "partitions")
    if parts is None:  # a flat list of partitions
        parts = plans
    out = []
    for k, part in enumerate(parts):
        nodes = _get(part, "source_nodes") or _get(part, "nodes") or []
        paths = [n if isinstance(n, str) else _get(n, "path") for n in nodes]
        number = _get(part, "id")
        out.append(
            (
                number if isinstance(number, int) else k + 1,
                str(_get(part, "ep") or "?"),
                [p for p in paths if p],
                _get(part, "fails"),
            )
        )
    return out


def partition_of(state: ModelState, node_path: str) -> tuple[int, str, int, str | None] | None:
    """(number, EP, size, failure) of the predicted partition holding ``node_path``."""
    for number, ep, paths, fails in predicted_partitions(state):
        if node_path in paths:
            return number, ep, len(paths), fails
    return None


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def node_hover_markdown(state: ModelState, path: str) -> str:
    ref = _node_ref(state, path)
    if ref is None:
        return f"`{path}`"
    lines = [f"**{ref.op_type}** `{ref.path}`", ""]
    domain = ref.domain
    rev = ref.since_version
    lines.append(
        f"- domain `{domain}`, opset {ref.opset if ref.opset is not None else '?'}, "
        + (f"operator revision {rev}" if rev is not None else "no schema at this opset")
    )
    for kind, names in (("inputs", ref.inputs), ("outputs", ref.outputs)):
        if names:
            typed = [
                f"`{n}`: {state.value_types.get((ref.graph.path, n), '?')}" for n in names if n
            ]
            lines.append(f"- {kind}: " + ", ".join(typed))
    ep = state.report.assignment.get(path)
    if ep:
        lines.append(f"- predicted EP: **{ep}**")
    # each fact once: two rules (or two EPs) may say the same sentence about a node
    said: set[str] = set()
    findings = _node_findings(state, path)
    refusals = [d for d in findings if d.category.value == "ep-support"]
    part = partition_of(state, path)
    if part is not None:
        number, part_ep, size, fails = part
        lines.append(
            f"- predicted partition #{number} on {part_ep} ({size} node{'s' if size != 1 else ''})"
        )
        if fails and not any(fails in d.message for d in refusals):
            said.add(fails)
            lines.append(f"- this partition is predicted to fail: {fails}")
    confirmed = state.confirmed.get(path)
    if confirmed:
        lines.append(f"- confirmed EP (real session): **{confirmed}**")
    for d in refusals:
        if d.message not in said:
            said.add(d.message)
            lines.append(f"- refused by {d.ep or 'an EP'}: {d.message}")
    others = [d for d in findings if d not in refusals and d.message not in said]
    if others:
        lines += ["", "**Findings**"]
        for d in others:
            if d.message not in said:  # two of ``others`` may repeat each other too
                said.add(d.message)
                lines.append(f"- `{d.code}` {d.message}")
    return "\n".join(lines)


def value_hover_markdown(state: ModelState, tok: Token) -> str:
    typ = state.value_types.get((tok.graph, tok.name), "?")
    lines = [f"**{tok.name}**: `{typ}`"]
    g = None
    if state.index is not None:
        g = next((x for x in state.index.graphs if x.path == tok.graph), None)
    while g is not None:
        if tok.name in g.producers:
            lines.append(
                f"- produced by `{g.producers[tok.name].path}` ({g.producers[tok.name].op_type})"
            )
            break
        if tok.name in g.initializers:
            init = g.initializers[tok.name]
            lines.append(f"- initializer of `{g.path}`, {tensor_elements(init)} elements")
            break
        if tok.name in g.inputs:
            lines.append(f"- input of graph `{g.path}`")
            break
        g = g.outer
    if state.index is not None:
        consumers = [
            n
            for x in state.index.graphs
            if x.path == tok.graph
            for n in x.consumers.get(tok.name, [])
        ]
        if consumers:
            lines.append(
                f"- read by {len(consumers)} node(s): "
                + ", ".join(f"`{n.label}`" for n in consumers[:8])
            )
    return "\n".join(lines)


def hover(state: ModelState, pos: lsp.Position) -> lsp.Hover | None:
    smap = state.source
    if smap is None:
        return None
    tok = smap.token_at(pos.line, pos.character)
    if tok is not None:
        rng = lsp.Range(lsp.Position(tok.line, tok.start), lsp.Position(tok.line, tok.end))
        return lsp.Hover(
            lsp.MarkupContent(lsp.MarkupKind.Markdown, value_hover_markdown(state, tok)), rng
        )
    entry = smap.node_at(pos.line)
    if entry is None or entry.line != pos.line:
        return None
    rng = lsp.Range(
        lsp.Position(entry.line, entry.op_start), lsp.Position(entry.line, entry.op_end)
    )
    return lsp.Hover(
        lsp.MarkupContent(lsp.MarkupKind.Markdown, node_hover_markdown(state, entry.path)), rng
    )


# ---------------------------------------------------------------------------
# Symbols, definition


def document_symbols(state: ModelState) -> list[lsp.DocumentSymbol]:
    """Graphs, their nodes, and subgraphs under the node that owns them (the Outline)."""
    smap, index = state.source, state.index
    if smap is None or index is None:
        return []
    lines = smap.lines

    def rng(line: int, end_line: int | None = None) -> lsp.Range:
        end_line = line if end_line is None else max(end_line, line)
        end_col = len(lines[end_line]) if 0 <= end_line < len(lines) else 0
        return lsp.Range(lsp.Position(line, 0), lsp.Position(end_line, end_col))

    def graph_symbol(g: Any) -> lsp.DocumentSymbol | None:
        entry = smap.graphs.get(g.path)
        if entry is None:
            return None
        children = []
        end = entry.end_line
        for n in g.nodes:
            ne = smap.nodes.get(n.path)
            if ne is None:
                continue
            end = max(end, ne.end_line)
            subs = [s for s in (graph_symbol(sg) for sg in n.subgraphs.values()) if s is not None]
            sel = lsp.Range(lsp.Position(ne.line, ne.op_start), lsp.Position(ne.line, ne.op_end))
            full = rng(ne.line, ne.end_line)
            children.append(
                lsp.DocumentSymbol(
                    name=n.label,
                    detail=n.op_type,
                    kind=lsp.SymbolKind.Function if g.is_function else lsp.SymbolKind.Method,
                    range=full,
                    selection_range=sel,
                    children=subs or None,
                )
            )
        kind = lsp.SymbolKind.Function if entry.kind == "function" else lsp.SymbolKind.Module
        return lsp.DocumentSymbol(
            name=g.path if entry.kind == "function" else f"{entry.name} ({g.path})",
            detail=f"{len(g.nodes)} nodes",
            kind=kind,
            range=rng(entry.line, end),
            selection_range=rng(entry.line),
            children=children or None,
        )

    out = []
    for g in [index.main, *index.functions.values()]:
        sym = graph_symbol(g)
        if sym is not None:
            out.append(sym)
    return out


def definition(state: ModelState, uri: str, pos: lsp.Position) -> lsp.Location | None:
    """From a value under the cursor to where it is produced (node output, input, initializer)."""
    smap = state.source
    if smap is None:
        return None
    tok = smap.token_at(pos.line, pos.character)
    if tok is None:
        return None
    target = smap.definition_of(tok.name, tok.graph)
    if target is None:
        return None
    return lsp.Location(
        uri=uri,
        range=lsp.Range(
            lsp.Position(target.line, target.start), lsp.Position(target.line, target.end)
        ),
    )


def folding_ranges(state: ModelState) -> list[lsp.FoldingRange]:
    """Graphs, nodes that span lines (nested graphs) and initializer blocks.

    An initializer block is of kind ``imports``: editors that fold imports when a
    file opens (VS Code's ``editor.foldingImportsByDefault``, which the extension
    turns on for ONNX) show a large model's graph view with its first node on
    screen instead of thousands of weight lines.
    """
    smap = state.source
    if smap is None:
        return []
    out = []
    for g in smap.graphs.values():
        if g.end_line > g.line:
            out.append(lsp.FoldingRange(start_line=g.line, end_line=g.end_line - 1))
        if g.initializers is not None and g.initializers[1] > g.initializers[0]:
            start, end = g.initializers
            out.append(
                lsp.FoldingRange(start_line=start, end_line=end, kind=lsp.FoldingRangeKind.Imports)
            )
    for n in smap.nodes.values():
        if n.end_line > n.line:
            out.append(lsp.FoldingRange(start_line=n.line, end_line=n.end_line - 1))
    return out


# ---------------------------------------------------------------------------
# Inlay hints and code lenses: the predicted EP per node and per partition


def inlay_hints(state: ModelState, rng: lsp.Range) -> list[lsp.InlayHint]:
    smap = state.source
    if smap is None or not state.report.assignment:
        return []
    lines = smap.lines
    out = []
    for path, ep in state.report.assignment.items():
        entry = smap.nodes.get(path)
        if entry is None or not (rng.start.line <= entry.line <= rng.end.line):
            continue
        label = f"→ {ep}"
        confirmed = state.confirmed.get(path)
        if confirmed and confirmed != ep:
            label += f" (ran on {confirmed})"
        out.append(
            lsp.InlayHint(
                position=lsp.Position(entry.line, len(lines[entry.line])),
                label=label,
                kind=lsp.InlayHintKind.Type,
                padding_left=True,
            )
        )
    return out


def code_lenses(state: ModelState) -> list[lsp.CodeLens]:
    """A summary lens on the first line, one per predicted partition at its first node, and
    one per root cause at the cause, with the nodes it costs."""
    smap = state.source
    if smap is None:
        return []
    counts = state.report.counts()
    parts = [f"{n} {label}{'s' if n != 1 else ''}" for label, n in counts.items() if n]
    eps = ", ".join(state.report.eps) or "no EP selected"
    title = f"onnxlint: {', '.join(parts) if parts else 'no findings'} · EPs: {eps}"
    if state.report.assignment:
        per_ep = Counter(state.report.assignment.values())
        # the nodes counted are the model's own, placed as on the graph level predicted
        level = state.report.stats.get("partition_level")
        where = " (as after ORT's level-1 optimizations)" if level == "optimized" else ""
        title += f" · predicted{where}: " + ", ".join(
            f"{n} on {ep}" for ep, n in per_ep.most_common()
        )
    lenses = [
        lsp.CodeLens(
            range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            command=lsp.Command(title=title, command=""),
        )
    ]
    for number, ep, paths, fails in predicted_partitions(state):
        entry = next((smap.nodes[p] for p in paths if p in smap.nodes), None)
        if entry is None:
            continue
        title = f"partition #{number} · {ep} · {len(paths)} node{'s' if len(paths) != 1 else ''}"
        if fails:
            title += f" · predicted to fail: {fails}"
        lenses.append(
            lsp.CodeLens(
                range=lsp.Range(lsp.Position(entry.line, 0), lsp.Position(entry.line, 0)),
                command=lsp.Command(title=title, command=""),
            )
        )
    is_text = state.is_text
    for g in causes.group(state.report):
        line = diagnostic_range(cause_finding(g), smap, is_text=is_text).start.line
        n = len(g.nodes)
        title = f"root cause ({g.code}) · costs {n} node{'s' if n != 1 else ''} on {g.ep}"
        lenses.append(
            lsp.CodeLens(
                range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
                command=lsp.Command(title=title, command=""),
            )
        )
    return lenses


# ---------------------------------------------------------------------------
# Code actions: suppressions written into the configuration through the editor


def _toml_key(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_ignore(text: str, table: str, key: str, code: str) -> str | None:
    """``text`` with ``code`` added to ``table.key``'s list, or None if that cannot be done safely.

    Appends to an existing ``key = [...]`` line of the table, else adds the line
    under the table header, else adds the table at the end. The result must
    parse as TOML and hold the code, or nothing is offered.
    """
    lines = text.split("\n")
    header = f"[{table}]"
    key_text = _toml_key(key)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == header)
    except StopIteration:
        start = None
    if start is None:
        # a blank line between the existing text and the new table
        lead = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        new = f"{text}{lead}{header}\n{key_text} = [{_toml_key(code)}]\n"
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
            len(lines),
        )
        done = False
        for i in range(start + 1, end):
            m = re.match(rf"^\s*{re.escape(key_text)}\s*=\s*\[(.*)\]\s*$", lines[i])
            if m:
                inner = m.group(1).strip().rstrip(",")
                items = f"{inner}, {_toml_key(code)}" if inner else _toml_key(code)
                lines[i] = f"{key_text} = [{items}]"
                done = True
                break
        if not done:
            lines.insert(start + 1, f"{key_text} = [{_toml_key(code)}]")
        new = "\n".join(lines)
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return None
    node: Any = parsed
    for part in _split_table(table):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict) or code not in node.get(key, []):
        return None
    return new


def _split_table(table: str) -> list[str]:
    return [p.strip('"') for p in re.findall(r'"[^"]*"|[^.]+', table)]


def suppression_edits(
    config_path: Path, config_text: str | None, model_rel: str, data: dict[str, Any]
) -> list[tuple[str, lsp.WorkspaceEdit]]:
    """(title, edit) pairs that silence a finding in the configuration file.

    The server never writes the configuration itself: the editor applies the
    edit to the (possibly unsaved) document, where the user sees and can undo it.
    A missing ``onnxlint.toml`` is created.
    """
    code = data.get("code")
    if not code:
        return []
    is_pyproject = config_path.name == "pyproject.toml"
    prefix = "tool.onnxlint." if is_pyproject else ""
    text = config_text or ""
    uri = path_to_uri(config_path)
    out: list[tuple[str, lsp.WorkspaceEdit]] = []
    candidates = []
    node_path = data.get("node_path")
    if node_path:
        candidates.append(
            (
                f"Ignore {code} for node {node_path} ({config_path.name})",
                f"{prefix}per-node-ignores",
                node_path,
            )
        )
    candidates.append(
        (
            f"Ignore {code} in {model_rel} ({config_path.name})",
            f"{prefix}per-file-ignores",
            model_rel,
        )
    )
    for title, table, key in candidates:
        new = add_ignore(text, table, key, code)
        if new is None:
            continue
        if config_text is None:
            changes: list[Any] = [
                lsp.CreateFile(
                    kind="create", uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)
                ),
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=None
                    ),
                    edits=[lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new)],
                ),
            ]
            edit = lsp.WorkspaceEdit(document_changes=changes)
        else:
            n_lines = text.count("\n")
            last = text.split("\n")[-1]
            whole = lsp.Range(lsp.Position(0, 0), lsp.Position(n_lines, len(last)))
            edit = lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(whole, new)]})
        out.append((title, edit))
    return out


def code_actions(
    state: ModelState,
    diagnostics: list[lsp.Diagnostic],
    config_path: Path,
    config_text: str | None,
    model_rel: str,
    fix_available: bool = False,
) -> list[lsp.CodeAction]:
    actions: list[lsp.CodeAction] = []
    seen: set[str] = set()
    for diag in diagnostics:
        data = diag.data if isinstance(diag.data, dict) else None
        if not data or diag.source != SOURCE:
            continue
        fix = data.get("fix") or {}
        dims = (fix.get("args") or {}).get("dims") or {}
        # only fixes the server can apply unattended: fix-shapes with a value for every dim
        applicable = (
            fix.get("action") == "fix-shapes"
            and dims
            and all(isinstance(v, int) for v in dims.values())
        )
        if fix_available and applicable:
            pins = ", ".join(f"{k}={v}" for k, v in dims.items())
            title = f"Fix dynamic dims ({pins}): write a new model next to the original"
            if title not in seen:
                seen.add(title)
                actions.append(
                    lsp.CodeAction(
                        title=title,
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        command=lsp.Command(
                            title=title,
                            command="onnxlint.applyFix",
                            arguments=[
                                {"model_uri": state.uri, "fix": fix, "code": data.get("code")}
                            ],
                        ),
                    )
                )
        for title, edit in suppression_edits(config_path, config_text, model_rel, data):
            if title in seen:
                continue
            seen.add(title)
            actions.append(
                lsp.CodeAction(
                    title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag], edit=edit
                )
            )
    return actions


def location_of(data: dict[str, Any]) -> Location:
    return Location(graph=data.get("graph") or "main", node_name=data.get("node_name"))

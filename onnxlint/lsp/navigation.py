"""Hover, symbols, definition, folding, inlay hints and code lenses: plain functions of
a ``ModelState`` that answer from the lint of the document version they are asked about."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from lsprotocol import types as lsp

from onnxlint.diagnostics import Diagnostic
from onnxlint.index import NodeRef
from onnxlint.lsp.printer import tensor_elements
from onnxlint.lsp.sourcemap import Token
from onnxlint.lsp.workspace import ModelState

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

from onnxlint.lsp.diagnostics import cause_finding, diagnostic_range

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
    for g in state.cause_groups():
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

"""Findings as LSP diagnostics: ranges from the text map, related locations, root causes
once at the cause, and what the Problems panel lists. Plain functions of a ``ModelState``."""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlint import causes
from onnxlint.diagnostics import Category, Diagnostic, Severity
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.lsp.workspace import ModelState, graph_uri, path_to_uri

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

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
    length = smap.line_length(line) if smap is not None else None
    if length is not None:
        end = max(length, start + 1)
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
    at_self: bool = True,
) -> lsp.Diagnostic:
    """One onnxlint finding as an LSP diagnostic, with ``data`` for code actions.

    ``view_uri``: the graph view whose ranges ``smap`` holds (a binary model's):
    related locations point into it. With ``at_self`` (the finding is published
    on the model's file) the first one is the finding itself, so that opening it
    in the Problems panel lands on the node's line.
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
        if view_uri is not None and at_self:
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
    shows every node's findings). At most :data:`PUBLISH_MAX` go out: hints past it
    are left out, so that the client drops nothing itself.

    A binary model's messages name the node in the ``file`` and ``graph`` views
    alike, and its related locations point into its graph view.
    """
    rendered = view != "file" or not state.view_pending
    smap = state.source if rendered else None
    binary = view in ("file", "graph")
    if view == "graph" and state.path is not None:
        view_uri = graph_uri(state.path)  # related nodes in the view itself
    loads = state.index is not None
    findings = state.report.diagnostics
    groups = state.cause_groups()
    grouped = {id(d) for g in groups for d in g.members}

    def convert(d: Diagnostic) -> lsp.Diagnostic:
        diag = to_lsp(
            d,
            smap,
            is_text=view == "text",
            model_uri=state.uri,
            docs_dir=docs_dir,
            # one message whether the view is open or not (a binary model's problems are
            # listed under its view either way): the Problems panel keeps its selection
            with_location_prefix=binary,
            view_uri=view_uri if binary else None,
            at_self=view == "file",
        )
        if isinstance(diag.data, dict):
            # a model that does not load has no graph view to list its problems under
            diag.data["has_view"] = loads
        return diag

    # one diagnostic per root cause, at the cause, its nodes as related information;
    # the findings it stands for stay on their nodes as hints (not in the Problems panel)
    heads = []
    for g in groups:
        diag = convert(cause_finding(g))
        if isinstance(diag.data, dict):
            diag.data["root_cause"] = {**g.cause.to_dict(), "nodes": len(g.nodes)}
        heads.append(diag)
    totals = Counter(
        (d.code, d.ep)
        for d in findings
        if id(d) not in grouped and not (is_quiet(d) and not show_hints)
    )
    # what each finding is published as, decided before any is converted: past the cap
    # only hints are left out, and on a 10k-node model most of its ~9,000 findings are
    # (converting them all cost 0.2-0.3 s per publish)
    plan: list[tuple[Diagnostic, bool, str]] = []  # finding, as a hint, message suffix
    listed: Counter[tuple[str, str | None]] = Counter()
    for d in findings:
        hint, suffix = _SEVERITY.get(d.severity) == lsp.DiagnosticSeverity.Hint, ""
        if id(d) in grouped or (not show_hints and is_quiet(d)):
            hint = True
        elif per_rule > 0:
            key = (d.code, d.ep)
            listed[key] += 1
            if listed[key] > per_rule:
                hint = True
            elif listed[key] == per_rule and totals[key] > per_rule:
                more = totals[key] - per_rule
                suffix = f"\n(+{more:,} more like this on other nodes, shown as hints)"
        plan.append((d, hint, suffix))
    notes = [
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
    # within the cap as ``within_cap`` keeps it, in the same order (causes, findings,
    # notes), converting only the findings that are kept
    items: list[tuple[lsp.Diagnostic | None, Diagnostic | None, bool, str]] = [
        (diag, None, diag.severity == lsp.DiagnosticSeverity.Hint, "") for diag in heads
    ]
    items += [(None, d, hint, suffix) for d, hint, suffix in plan]
    items += [(diag, None, False, "") for diag in notes]
    room = len(items)
    if room > PUBLISH_MAX:
        room = PUBLISH_MAX - sum(1 for *_, hint, _ in items if not hint)
    out: list[lsp.Diagnostic] = []
    for ready, finding, hint, suffix in items:
        if hint:
            if room <= 0:
                continue
            room -= 1
        if ready is None:
            assert finding is not None
            ready = convert(finding)
            if hint:
                ready.severity = lsp.DiagnosticSeverity.Hint
            ready.message += suffix
        out.append(ready)
    return out


#: diagnostics a client keeps per document: VS Code keeps 1,000 (errors first, hints
#: last) and lists an extra "Not showing N further errors and warnings" entry for the
#: rest, which the Problems panel shows as one more information
PUBLISH_MAX = 1000


def within_cap(diags: list[lsp.Diagnostic], cap: int | None = None) -> list[lsp.Diagnostic]:
    """``diags`` with hints left out past ``cap`` (:data:`PUBLISH_MAX`) in all: every
    listed problem is kept (the hover still shows each node's findings)."""
    cap = PUBLISH_MAX if cap is None else cap
    if len(diags) <= cap:
        return diags
    room = cap - sum(1 for d in diags if d.severity != lsp.DiagnosticSeverity.Hint)
    out = []
    for d in diags:
        if d.severity == lsp.DiagnosticSeverity.Hint:
            if room <= 0:
                continue
            room -= 1
        out.append(d)
    return out


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

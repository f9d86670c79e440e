"""Where each node and value of a parsed ``.onnxtxt`` document sits in the user's own
text: :func:`map_text_source` builds its :class:`~onnxlint.lsp.sourcemap.SourceMap`
(the shape the graph view's printer gives a binary model), and maps an edit from the
previous map where the text around the edit is unchanged.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from onnxlint.index import GraphRef, ModelIndex, NodeRef
from onnxlint.lsp.sourcemap import GraphEntry, NodeEntry, SourceMap, Token
from onnxlint.modelfile.textedit import common_prefix, common_suffix

#: node patterns kept compiled (``_node_pattern``): a 10k-node document's, with room to edit
NODE_PATTERNS = 20_000
_WORD = r"[A-Za-z_][A-Za-z0-9_.\-/:]*"
#: a value name as the text spells it: a bare word, or quoted (``"/layers.0/Relu_1"``, as
#: ``onnx.printer`` writes names that are not identifiers); the name is group 1 or 2.
#: A ``{`` opens a tensor's values, which hold no names and are jumped over
_NAME = re.compile(rf'"([^"\n]*)"|({_WORD})|\{{')


def _names(text: str, start: int, end: int) -> Iterator[tuple[str, int]]:
    """The value names in ``text[start:end]``, with their offsets; tensor values skipped."""
    at = start
    while True:
        m = _NAME.search(text, at, end)
        if m is None:
            return
        if m.group(0) == "{":
            at = _skip_balanced(text, m.start())
            continue
        at = m.end()
        k = 1 if m.group(1) is not None else 2
        yield m.group(k), m.start(k)


class _Mapped(NamedTuple):
    """What mapping one node (without subgraphs) found and read, kept for the next map of
    an edited text (``map_text_source(previous=...)``): offsets into the masked text.

    A named tuple, as ``Token``: an edit that moves the text after it makes one per node
    there, and a frozen dataclass' ``__init__`` cost a third of mapping such an edit."""

    #: what the search depended on besides the text: graph, outputs, op, inputs
    key: tuple[object, ...]
    #: where the search started (the previous node's end) and the offset after the last
    #: character any step of the mapping read
    cursor: int
    reach: int
    #: where the next node's search starts (this node's match end)
    after: int
    entry: NodeEntry
    tokens: tuple[Token, ...]


@dataclass(frozen=True)
class _MappedHeader:
    """What mapping the main graph's header found and read (from the text's start)."""

    key: tuple[object, ...]
    reach: int
    body: int
    entry: GraphEntry
    tokens: tuple[Token, ...]


@dataclass
class _TextMemo:
    masked: str
    nodes: dict[str, _Mapped]
    header: _MappedHeader | None = None


def _node_key(ref: NodeRef) -> tuple[object, ...] | None:
    """What a node's mapping depends on besides the text; None: not reused (subgraphs)."""
    if ref.subgraphs:
        return None
    # the index's tuples and its interned op type, read from protobuf once: no new strings
    # per node and edit
    return (ref.graph.path, ref._outputs, ref.op_type, ref._inputs)


class _Reuse:
    r"""Which of a previous map's nodes hold in the edited text, exactly as a fresh search
    would find them.

    Every step of mapping a node reads the masked text forward from its search start
    (``cursor``) up to ``reach``. A node before the edit whose search starts where it
    started before and whose reach ends before the first changed character read the
    same characters, so it found the same. (The node pattern's unbounded reads stop at
    the next ``]`` after a ``[`` (``[^\]]*``) and at the end of the word after the op
    (a domain's ``[\w.]*``); whitespace runs end at the op: ``reach`` counts them.) A node
    after the edit whose search starts at the same place in the unchanged tail, shifted
    by the edit's length, reads the same characters shifted; the tail is cut at a line
    start, so its columns hold and its lines move by the edit's line count.
    """

    def __init__(self, memo: _TextMemo, masked: str, known: tuple[int, int] = (0, 0)) -> None:
        old = memo.masked
        self.nodes = memo.nodes
        self.prefix = common_prefix(old, masked, known[0])
        limit = min(len(old), len(masked)) - self.prefix
        tail = common_suffix(old, masked, limit, known[1])
        # the tail from its first line start: a newline of the common part, so the
        # same in both texts
        nl = old.find("\n", len(old) - tail)
        self.shift = len(masked) - len(old)
        if tail == 0 or nl < 0:
            self.tail_start = len(old) + 1  # nothing after the edit is reused
            self.lines = 0
        else:
            self.tail_start = nl + 1
            # the texts agree up to ``prefix``: only the newlines after it can differ
            p = self.prefix
            self.lines = masked.count("\n", p, nl + 1 + self.shift) - old.count("\n", p, nl + 1)

    def node(self, ref: NodeRef, cursor: int) -> _Mapped | None:
        """The previous mapping of the node ``ref`` if it holds (shifted), else None."""
        was = self.nodes.get(ref.path)
        # ``_node_key(ref)`` for a node without a body (the caller's), made here: one call
        # less per node of the text
        if was is None or was.key != (ref.graph.path, ref._outputs, ref.op_type, ref._inputs):
            return None
        if was.cursor == cursor and was.reach <= self.prefix:
            return was
        if was.cursor > self.tail_start and was.cursor + self.shift == cursor:
            if not self.lines and not self.shift:
                return was
            return _shifted(was, self.shift, self.lines)
        return None


def _shifted(was: _Mapped, shift: int, lines: int) -> _Mapped:
    if not lines:  # an edit within its lines: what the node holds (lines, columns) stays
        return _Mapped(
            was.key, was.cursor + shift, was.reach + shift, was.after + shift, was.entry, was.tokens
        )
    e = was.entry
    entry = NodeEntry(
        e.path, e.graph, e.line + lines, e.op_start, e.op_end, e.start, e.end_line + lines
    )
    tokens = tuple(t._replace(line=t.line + lines) for t in was.tokens)
    return _Mapped(was.key, was.cursor + shift, was.reach + shift, was.after + shift, entry, tokens)


def map_text_source(
    text: str,
    index: ModelIndex,
    previous: SourceMap | None = None,
    span: tuple[int, int, int] | None = None,
) -> SourceMap:
    """Locate the nodes and values of a parsed ``.onnxtxt`` model in its source text.

    The parser keeps nodes in source order and ``index.nodes`` lists them
    pre-order (a node, then the nodes of its subgraphs), which is source order
    too; so each node is searched for after the previous one. A node that cannot
    be found (exotic spelling) is left out of the map: its diagnostics then sit
    on the graph's first line.

    ``previous``: the map of the text before an edit. The nodes before and after the
    edited part that a search would find where they were are taken from it (``_Reuse``
    says when that holds), so an edit maps the nodes around it only; the result is the
    map a fresh search gives (``tests/lsp/test_text_map_reuse.py``).

    ``span``: where ``text`` differs from ``previous``'s (``textedit.changed_span``), when
    the caller knows: the line starts and the masked text are then taken from
    ``previous`` around the changed lines instead of read from the whole text again.
    """
    smap = SourceMap(text=text)
    for g in index.graphs:
        smap.outer[g.path] = g.outer.path if g.outer is not None else None
    memo = previous._text_memo if previous is not None else None
    shared = (0, 0)  # how much of the masked texts' start and end the two share for sure
    if memo is not None and previous is not None and span is not None:
        around = _around_edit(previous, memo, text, span)
    else:
        around = None
    if around is not None:
        line_starts, masked, shared = around
    else:
        line_starts = [0]
        for newline in re.finditer("\n", text):
            line_starts.append(newline.end())
        masked = _mask_comments(text)
    smap.line_starts = line_starts

    def pos(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(line_starts, offset) - 1
        return line, offset - line_starts[line]

    reuse = _Reuse(memo, masked, shared) if memo is not None else None
    mapped: dict[str, _Mapped] = {}
    cursor = 0
    graph_cursor: dict[str, int] = {}
    # graph headers: main first, functions by name later; subgraphs after their parent node
    main = index.main
    header: _MappedHeader | None = None
    if main.proto is not None:
        # nodes are searched for from the body on: a header's initializer values
        # (megabytes of numbers) are never scanned once per node
        hkey = (main.proto.name, tuple(main.inputs), tuple(main.initializers), tuple(main.outputs))
        known = memo.header if memo is not None else None
        if (
            known is not None
            and reuse is not None
            and known.key == hkey
            and known.reach <= reuse.prefix
        ):
            # an edit after the header: it reads the same characters from the start
            smap.graphs[main.path] = known.entry
            smap.tokens.extend(known.tokens)
            header, cursor = known, known.body
        else:
            read: list[int] = []
            cursor = _map_graph_header(smap, masked, main, main.proto.name, 0, pos, read)
            found = smap.graphs.get(main.path)
            if found is not None:
                header = _MappedHeader(hkey, read[0], cursor, found, tuple(smap.tokens))
    all_tokens, entries, token_spans = smap.tokens, smap.nodes, smap.node_tokens
    reused = reuse.node if reuse is not None else None
    for ref in index.nodes:
        g = ref.graph
        if g.function is not None and g.path not in graph_cursor:
            fn = g.function
            assert fn is not None
            m = re.search(rf"(?m)^\s*{re.escape(fn.name)}\s*\(", masked[cursor:])
            if m:
                start = cursor + m.start()
                cursor = _map_graph_header(smap, masked, g, fn.name, start, pos)
            graph_cursor[g.path] = cursor
        if reused is not None and not ref.subgraphs:  # a node with a body is mapped anew
            path = ref.path
            was = reused(ref, cursor)
            if was is not None:
                entries[path] = was.entry
                start = len(all_tokens)
                all_tokens.extend(was.tokens)
                token_spans[path] = (start, len(all_tokens))
                mapped[path] = was
                cursor = was.after
                continue
        outs = tuple(ref.node.output)
        searched_from = cursor
        m = _node_pattern(outs, ref.node.op_type).search(masked, cursor)
        if m is None:
            continue
        first_token = len(smap.tokens)
        _, col = pos(m.start())
        op_line, op_col = pos(m.start(len(outs) + 1))
        op_len = len(m.group(len(outs) + 1))
        entry = NodeEntry(ref.path, g.path, op_line, op_col, op_col + op_len, col)
        smap.nodes[ref.path] = entry
        for k, out in enumerate(ref.node.output):
            tl, tc = pos(m.start(k + 1))
            smap.tokens.append(Token(out, g.path, tl, tc, tc + len(out), "output", ref.path))
        after = m.end()
        # skip a balanced <attributes> block (which may hold whole subgraphs)
        after = _skip_attributes(masked, after)
        paren = masked.find("(", after)
        close = masked.find(")", paren) if paren >= 0 else -1
        # read so far: the match and the character after it (``\b``), the brackets the
        # pattern's ``[^\]]*`` may have scanned, the attributes, up to ``(``
        # and the word the op's ``[\w.]*`` (a domain prefix) may have run on into
        word = _WORD_RUN.match(masked, m.end())
        reach = max(
            m.end() + 1,
            (word.end() + 1) if word else 0,
            after,
            paren + 1,
            _bracket_reach(masked, searched_from, m.start()),
        )
        if paren >= 0 and close >= 0:
            for name, at in _names(masked, paren + 1, close):
                if name in ref.node.input:
                    tl, tc = pos(at)
                    smap.tokens.append(
                        Token(name, g.path, tl, tc, tc + len(name), "input", ref.path)
                    )
            entry.end_line = pos(close)[0]
            reach = max(reach, close + 1, _names_reach(masked, paren + 1, close))
        else:
            entry.end_line = entry.line
            reach = len(masked) + 1  # searched to the end: never reused before an edit
        smap.node_tokens[ref.path] = (first_token, len(smap.tokens))
        for sub in ref.subgraphs.values():
            if sub.proto is not None:
                _map_graph_header(smap, masked, sub, sub.proto.name, m.end(), pos)
        cursor = m.end()
        key = _node_key(ref)
        if key is not None:
            tokens = tuple(smap.tokens[first_token:])
            mapped[ref.path] = _Mapped(key, searched_from, reach, cursor, entry, tokens)
    smap._text_memo = _TextMemo(masked, mapped, header)
    return smap


def _around_edit(
    previous: SourceMap, memo: _TextMemo, text: str, span: tuple[int, int, int]
) -> tuple[list[int], str, tuple[int, int]] | None:
    """``text``'s line starts and masked text, from ``previous``'s where ``span`` says the
    two texts agree, and how much of the masked texts' start and end the two share: the
    changed lines are read again, whole (a comment runs to its line's end, so masking is
    line by line). None when ``previous`` has no line starts or ``span`` does not fit."""
    old, starts = previous.text, previous.line_starts
    start, old_end, new_end = span
    shift = len(text) - len(old)
    if starts is None or not 0 <= start <= old_end <= len(old) or new_end - old_end != shift:
        return None
    a = old.rfind("\n", 0, start) + 1  # the first changed line's start
    b = old.find("\n", old_end)  # the newline ending the last changed line
    if b < 0:
        b = len(old)
    middle = text[a : b + shift]
    fresh = [a + m.end() for m in re.finditer("\n", middle)]
    before, after = bisect.bisect_right(starts, a), bisect.bisect_right(starts, b)
    line_starts = starts[:before] + fresh + [s + shift for s in starts[after:]]
    # a text with nothing to blank (printed models hold no comments) is its own: no copy
    masked = memo.masked[:a] + _mask_comments(middle) + memo.masked[b:] if "#" in text else text
    return line_starts, masked, (a, len(old) - b)


#: what the node pattern's domain part ``[\w.]*`` reads on from the op's end
_WORD_RUN = re.compile(r"[\w.]*")


def _bracket_reach(text: str, start: int, end: int) -> int:
    r"""How far the node pattern's ``\[[^\]]*\]`` may have read when tried at each
    ``[`` in ``text[start:end]``: past the ``]`` that follows the last of them."""
    last = text.rfind("[", start, end)
    if last < 0:
        return 0
    close = text.find("]", last)
    return len(text) + 1 if close < 0 else close + 1


def _names_reach(text: str, start: int, end: int) -> int:
    """How far ``_names(text, start, end)`` reads: tensor values it jumps over may run
    past ``end``."""
    reach = end
    at = start
    while True:
        brace = text.find("{", at, end)
        if brace < 0:
            return reach
        at = _skip_balanced(text, brace)
        reach = max(reach, at)
        if at >= end:
            return reach


@functools.lru_cache(maxsize=NODE_PATTERNS)
def _node_pattern(outs: tuple[str, ...], op: str) -> re.Pattern[str]:
    """The text of a node with these outputs and op: ``[name] out, ... = domain.Op``.

    Kept across maps: ``re`` keeps 512 compiled patterns, so a 1k-node document
    compiled every node's pattern again on each keystroke.
    """
    name_part = r"(?:\[[^\]]*\]\s*)?"
    outs_part = r"\s*,\s*".join(f'"?({re.escape(o)})"?' for o in outs)
    return re.compile(rf"{name_part}{outs_part}\s*=\s*((?:[A-Za-z_][\w.]*\.)?{re.escape(op)})\b")


def _mask_comments(text: str) -> str:
    """Blank out ``#`` comments (same length, so offsets still hold); a text without
    any is its own masked text."""
    if "#" not in text:
        return text
    return re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)


def _skip_attributes(text: str, at: int) -> int:
    """The offset after a balanced ``<attributes>`` block at ``at`` (whitespace first), else ``at``."""
    i = _skip_space(text, at)
    return _skip_balanced(text, i) if text.startswith("<", i) else at


#: the characters ``_skip_balanced`` stops at; anything else (numbers, names) is jumped over
_BRACKETS = re.compile(r'["(<{\[)>}\]=]')


def _skip_balanced(text: str, at: int) -> int:
    """The offset after the bracket that closes the one at ``at`` (quoted text skipped);
    ``at`` itself when no bracket opens there, the text's end when none closes it."""
    if at >= len(text) or text[at] not in "(<{[":
        return at
    depth = 0
    i = at
    while True:
        m = _BRACKETS.search(text, i)
        if m is None:
            return len(text)
        ch = m.group(0)
        i = m.end()
        if ch == '"':
            close = text.find('"', i)
            if close < 0:
                return len(text)
            i = close + 1
        elif ch == "=":
            if text.startswith(">", i):
                i += 1  # the arrow of a subgraph signature is not a closing bracket
        elif ch in "(<{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _header_body_reach(text: str, params: int) -> tuple[int, int]:
    """Where the ``{`` of a graph's body is, given the ``(`` of its parameters (-1: not
    found), and the offset after the last character read to find it.

    The header is ``name (inputs) => (outputs) <initializers> {``; inputs may carry
    values (``float[2] w = {1, 2}``) and initializers megabytes of them, so the
    brackets are followed rather than the first ``{`` taken.
    """
    at = _skip_space(text, _skip_balanced(text, params))
    if text.startswith("=>", at):
        at = _skip_space(text, _skip_balanced(text, _skip_space(text, at + 2)))
    at = _skip_space(text, _skip_balanced(text, at) if text.startswith("<", at) else at)
    if text.startswith("{", at):
        return at, at + 1
    # an unusual header: the first brace, as before (what was read above may run further)
    return text.find("{", params), len(text) + 1


def _map_graph_header(
    smap: SourceMap,
    text: str,
    g: GraphRef,
    name: str,
    start: int,
    pos: object,
    reach: list[int] | None = None,
) -> int:
    """Record a graph's header line and the tokens of its inputs and initializers;
    returns where its body starts (``start`` when the header is not found).

    ``reach``: given, it receives the offset after the last character read."""
    assert callable(pos)
    m = re.compile(rf"\b{re.escape(name or '')}\s*\(").search(text, start) if name else None
    if m is None:
        smap.graphs.setdefault(g.path, GraphEntry(g.path, name or "graph", 0, 0, "graph"))
        if reach is not None:
            reach.append(len(text) + 1)  # searched to the end
        return start
    body, read = _header_body_reach(text, m.end() - 1)
    begin = body if body >= 0 else m.start()
    end = body if body >= 0 else len(text)
    line, _ = pos(m.start())
    kind = "function" if g.is_function else "graph"
    smap.graphs[g.path] = GraphEntry(g.path, name, line, pos(end)[0], kind)
    defined = {*g.inputs, *g.initializers}
    if reach is not None:
        reach.append(max(read, end + 1, _names_reach(text, m.end(), end)))
    for word, at in _names(text, m.end(), end):
        if word in defined:
            tl, tc = pos(at)
            role = (
                "initializer" if word in g.initializers and word not in g.inputs else "graph-input"
            )
            smap.tokens.append(Token(word, g.path, tl, tc, tc + len(word), role))
            defined.discard(word)
        elif word in g.outputs:
            tl, tc = pos(at)
            smap.tokens.append(Token(word, g.path, tl, tc, tc + len(word), "graph-output"))
    return begin

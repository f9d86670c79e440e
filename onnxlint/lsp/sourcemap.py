"""Where each node and value of a model sits in a text rendering of it.

Two producers share one ``SourceMap`` shape, so every editor feature works the
same on both:

- ``printer.render_graph_view(index)`` prints a binary model as ONNX text (the
  syntax of ``onnx.printer``: nested graphs inline, model-local functions after
  the main graph, large initializers elided) and records each node's line and
  each value token while it writes;
- ``textmap.map_text_source(text, index)`` finds the nodes of a parsed ``.onnxtxt``
  document in the user's own text, in the order the parser kept them.

Lines and columns are 0-based, columns count UTF-16 code units only for ASCII
text (model names are ASCII in practice; a non-ASCII name shifts columns, not
lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from onnxlint.lsp.textmap import _TextMemo


class Token(NamedTuple):
    """One occurrence of a value name in the text.

    A named tuple, not a frozen dataclass: a 10k-node view has ~27k of them and
    a frozen dataclass' ``__init__`` made them half of the rendering time.
    """

    name: str
    graph: str
    line: int
    start: int
    end: int
    #: output | input | graph-input | graph-output | initializer
    role: str
    node: str | None = None


@dataclass
class NodeEntry:
    path: str
    graph: str
    line: int
    #: span of the ``domain.OpType`` text on ``line``
    op_start: int
    op_end: int
    #: the node's first character on ``line`` and the last line it spans (nested graphs)
    start: int = 0
    end_line: int = 0


@dataclass
class GraphEntry:
    path: str
    name: str
    line: int
    end_line: int
    kind: str  # graph | function
    #: lines of the ``<`` and ``>`` around the initializers (graph views only)
    initializers: tuple[int, int] | None = None


#: token roles that define a value (``definition_of`` looks for these)
_DEFINING_ROLES = frozenset({"output", "graph-input", "initializer"})
#: how many tokens from the start ``SourceMap.definition_of`` reads before it builds the
#: table of every definition
DEFINITION_SCAN = 2048


@dataclass
class SourceMap:
    text: str
    nodes: dict[str, NodeEntry] = field(default_factory=dict)
    graphs: dict[str, GraphEntry] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    #: graph path -> enclosing graph path (None for main and functions)
    outer: dict[str, str | None] = field(default_factory=dict)
    #: lookup tables over ``tokens``, each built on first use (see ``_table``)
    _tables: dict[str, tuple[tuple[int, int], dict[Any, Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: the offset of each line of ``text`` (``map_text_source`` sets it; None: not known)
    line_starts: list[int] | None = field(default=None, repr=False, compare=False)
    #: each node's tokens, as a slice of ``tokens`` (``map_text_source`` fills it)
    node_tokens: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)
    #: ``text``'s lines, split on first use (by the ``id`` of the text they split)
    _lines: tuple[int, list[str]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    #: what ``map_text_source`` found per node, for the map of the next edit of the text
    _text_memo: _TextMemo | None = field(default=None, init=False, repr=False, compare=False)

    def _table(self, kind: str) -> dict[Any, Any]:
        """Tokens by line (``by_line``), by (node, name) (``in_node``) or the defining
        ones by (graph, name) (``defs``), in token order; each is built when first asked.

        A 10k-node graph view has ~27k tokens: scanning them per diagnostic or per
        hover made publishing one model's diagnostics quadratic (seconds); building all
        three for each edit cost 25 ms of its publish. A table is rebuilt if the text or
        the token list changed since (producers fill a map before anyone reads it, so
        that is a safeguard, not a pattern).
        """
        stamp = (id(self.text), len(self.tokens))
        found = self._tables.get(kind)
        if found is not None and found[0] == stamp:
            return found[1]
        table: dict[Any, Any] = {}
        if kind == "by_line":
            for tok in self.tokens:
                table.setdefault(tok.line, []).append(tok)
        elif kind == "in_node":
            for tok in self.tokens:
                if tok.node is not None:
                    table.setdefault((tok.node, tok.name), tok)
        else:
            for tok in self.tokens:
                if tok.role in _DEFINING_ROLES:
                    table.setdefault((tok.graph, tok.name), tok)
        self._tables[kind] = (stamp, table)
        return table

    def forget_edits(self) -> None:
        """Drop what ``map_text_source`` kept for mapping the next edit of this text (the
        next map of an edit from here is then a fresh one, as before any reuse)."""
        self._text_memo = None

    @property
    def lines(self) -> list[str]:
        split = self._lines
        if split is None or split[0] != id(self.text):
            split = self._lines = (id(self.text), self.text.split("\n"))
        return split[1]

    def line_length(self, line: int) -> int | None:
        """The length of line ``line`` (None: no such line), from ``line_starts`` when
        known: the diagnostics' ranges need no split of a megabytes-long text."""
        starts = self.line_starts
        if starts is None:
            lines = self.lines
            return len(lines[line]) if 0 <= line < len(lines) else None
        if not 0 <= line < len(starts):
            return None
        end = starts[line + 1] - 1 if line + 1 < len(starts) else len(self.text)
        return end - starts[line]

    def token_in_node(self, node: str, name: str) -> Token | None:
        """The first occurrence of value ``name`` in node ``node``'s text."""
        span = self.node_tokens.get(node)
        if span is not None and span[1] <= len(self.tokens):
            for k in range(*span):
                tok = self.tokens[k]
                if tok.name == name and tok.node == node:
                    return tok
            return None
        found: Token | None = self._table("in_node").get((node, name))
        return found

    def line_of_node(self, path: str) -> int | None:
        entry = self.nodes.get(path)
        return entry.line if entry else None

    def node_at(self, line: int) -> NodeEntry | None:
        """The innermost node whose text covers ``line`` (a node line wins over its parent)."""
        best: NodeEntry | None = None
        for entry in self.nodes.values():
            if entry.line <= line <= max(entry.end_line, entry.line) and (
                best is None or entry.line >= best.line
            ):
                best = entry
        return best

    def token_at(self, line: int, character: int) -> Token | None:
        for tok in self._table("by_line").get(line, ()):
            if tok.start <= character <= tok.end:
                return tok
        return None

    def definition_of(self, name: str, graph: str) -> Token | None:
        """Where ``name`` is defined as seen from ``graph``: here, else in an enclosing graph.

        The first defining token of a graph's value, in token order; one among the first
        ``DEFINITION_SCAN`` tokens (the main graph's inputs and initializers, where the
        findings without a node sit) is found by reading them, before the table of every
        token is built (each edit's map would build it for its publish)."""
        g: str | None = graph
        head = self.tokens[:DEFINITION_SCAN]
        while g is not None:
            for tok in head:
                if tok.name == name and tok.graph == g and tok.role in _DEFINING_ROLES:
                    return tok
            # every token read: none defines it here; else the table of them all says
            whole = len(head) == len(self.tokens)
            found: Token | None = None if whole else self._table("defs").get((g, name))
            if found is not None:
                return found
            g = self.outer.get(g)
        return None

    def value_line(self, name: str, graph: str) -> int | None:
        tok = self.definition_of(name, graph)
        return tok.line if tok else None

"""Where each node and value of a model sits in a text rendering of it.

Two producers share one ``SourceMap`` shape, so every editor feature works the
same on both:

- ``render_graph_view(model, index)`` prints a binary model as ONNX text (the
  syntax of ``onnx.printer``: nested graphs inline, model-local functions after
  the main graph, large initializers elided) and records each node's line and
  each value token while it writes;
- ``map_text_source(text, index)`` finds the nodes of a parsed ``.onnxtxt``
  document in the user's own text, in the order the parser kept them.

Lines and columns are 0-based, columns count UTF-16 code units only for ASCII
text (model names are ASCII in practice; a non-ASCII name shifts columns, not
lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import onnx

from onnxlint.index import DEFAULT_DOMAIN, GraphRef, ModelIndex, NodeRef
from onnxlint.tensors import inline_array

#: initializers and tensor attributes with more elements than this are elided
MAX_INLINE_ELEMENTS = 16
INDENT = "   "


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


@dataclass
class _Lookups:
    stamp: tuple[int, int]
    lines: list[str]
    by_line: dict[int, list[Token]]
    in_node: dict[tuple[str, str], Token]
    defs: dict[tuple[str, str], Token]


@dataclass
class SourceMap:
    text: str
    nodes: dict[str, NodeEntry] = field(default_factory=dict)
    graphs: dict[str, GraphEntry] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    #: graph path -> enclosing graph path (None for main and functions)
    outer: dict[str, str | None] = field(default_factory=dict)
    #: lookup tables over ``tokens`` and ``text``, built on first use (see ``_lookups``)
    _lookup: _Lookups | None = field(default=None, init=False, repr=False, compare=False)

    def _lookups(self) -> _Lookups:
        """Tables keyed by line, (node, name) and (graph, name), in token order.

        A 10k-node graph view has ~27k tokens: scanning them per diagnostic or per
        hover made publishing one model's diagnostics quadratic (seconds). The
        tables are rebuilt if the text or the token list changed since (producers
        fill a map before anyone reads it, so that is a safeguard, not a pattern).
        """
        found = self._lookup
        if found is not None and found.stamp == (id(self.text), len(self.tokens)):
            return found
        by_line: dict[int, list[Token]] = {}
        in_node: dict[tuple[str, str], Token] = {}
        defs: dict[tuple[str, str], Token] = {}
        for tok in self.tokens:
            by_line.setdefault(tok.line, []).append(tok)
            if tok.node is not None:
                in_node.setdefault((tok.node, tok.name), tok)
            if tok.role in _DEFINING_ROLES:
                defs.setdefault((tok.graph, tok.name), tok)
        found = _Lookups(
            (id(self.text), len(self.tokens)), self.text.split("\n"), by_line, in_node, defs
        )
        self._lookup = found
        return found

    @property
    def lines(self) -> list[str]:
        return self._lookups().lines

    def token_in_node(self, node: str, name: str) -> Token | None:
        """The first occurrence of value ``name`` in node ``node``'s text."""
        return self._lookups().in_node.get((node, name))

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
        for tok in self._lookups().by_line.get(line, ()):
            if tok.start <= character <= tok.end:
                return tok
        return None

    def definition_of(self, name: str, graph: str) -> Token | None:
        """Where ``name`` is defined as seen from ``graph``: here, else in an enclosing graph."""
        defs = self._lookups().defs
        g: str | None = graph
        while g is not None:
            tok = defs.get((g, name))
            if tok is not None:
                return tok
            g = self.outer.get(g)
        return None

    def value_line(self, name: str, graph: str) -> int | None:
        tok = self.definition_of(name, graph)
        return tok.line if tok else None


# ---------------------------------------------------------------------------
# The graph view of a binary model


class _Writer:
    """Accumulates lines and hands back the column where each piece it writes starts."""

    __slots__ = ("col", "lines", "parts")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.col = 0

    @property
    def line(self) -> int:
        return len(self.lines)

    def put(self, text: str) -> int:
        start = self.col
        self.parts.append(text)
        self.col = start + len(text)
        return start

    def newline(self) -> None:
        self.lines.append("".join(self.parts).rstrip())
        self.parts = []
        self.col = 0

    def text(self) -> str:
        if self.parts:
            self.newline()
        return "\n".join(self.lines) + "\n"


def elem_type_name(elem: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem).lower()
    except ValueError:
        return f"type{elem}"


def type_text(tp: onnx.TypeProto) -> str:
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        t = getattr(tp, kind)
        base = elem_type_name(t.elem_type)
        # ONNX text: ``float`` is a scalar (empty shape), ``float[]`` an unknown shape
        if not t.HasField("shape"):
            base += "[]"
        elif t.shape.dim:
            dims = []
            for d in t.shape.dim:
                if d.HasField("dim_value"):
                    dims.append(str(d.dim_value))
                elif d.HasField("dim_param"):
                    dims.append(d.dim_param)
                else:
                    dims.append("?")
            base += "[" + ",".join(dims) + "]"
        return base if kind == "tensor_type" else f"sparse_tensor({base})"
    if kind == "sequence_type":
        return f"seq({type_text(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_text(tp.optional_type.elem_type)})"
    if kind == "map_type":
        key = elem_type_name(tp.map_type.key_type)
        return f"map({key}, {type_text(tp.map_type.value_type)})"
    return "?"


def tensor_type_text(t: onnx.TensorProto) -> str:
    if not t.dims:
        return elem_type_name(t.data_type)
    return f"{elem_type_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"


def tensor_elements(t: onnx.TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


def tensor_value_text(t: onnx.TensorProto) -> str:
    """``{1,2,3}`` for small in-memory tensors, ``{...}`` for large or external ones."""
    arr = inline_array(t, max_elements=MAX_INLINE_ELEMENTS)  # never external data
    if arr is None:
        return "{...}"
    values = arr.ravel().tolist()
    return "{" + ",".join(_scalar_text(v) for v in values) + "}"


def _scalar_text(v: object) -> str:
    if isinstance(v, bytes):
        return _quote(v.decode("utf-8", "replace"))
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _opsets_text(imports: list[onnx.OperatorSetIdProto]) -> str:
    return "[" + ", ".join(f"{_quote(i.domain)} : {i.version}" for i in imports) + "]"


class _GraphViewPrinter:
    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self.w = _Writer()
        self.smap = SourceMap(text="")
        for g in index.graphs:
            self.smap.outer[g.path] = g.outer.path if g.outer is not None else None

    def model(self, model: onnx.ModelProto) -> SourceMap:
        w = self.w
        header = [
            f"ir_version: {model.ir_version}",
            f"opset_import: {_opsets_text(list(model.opset_import))}",
        ]
        for key in ("producer_name", "producer_version", "domain"):
            if getattr(model, key):
                header.append(f"{key}: {_quote(getattr(model, key))}")
        if model.model_version:
            header.append(f"model_version: {model.model_version}")
        w.put("<")
        w.newline()
        for i, item in enumerate(header):
            w.put(INDENT + item + ("," if i < len(header) - 1 else ""))
            w.newline()
        w.put(">")
        w.newline()
        self.graph(self.index.main, 0)
        w.newline()
        for fn in self.index.functions.values():
            self.function(fn)
        self.smap.text = w.text()
        return self.smap

    def graph(self, g: GraphRef, depth: int) -> None:
        """Print ``name (inputs) => (outputs) <initializers> { nodes }``; ends after ``}``."""
        w = self.w
        proto = g.proto
        assert proto is not None
        start = w.line
        w.put(f"{proto.name or 'graph'} (")
        self._signature(g, list(proto.input), "graph-input")
        w.put(") => (")
        self._signature(g, list(proto.output), "graph-output")
        w.put(")")
        inits = list(proto.initializer)
        block: tuple[int, int] | None = None
        if inits:
            w.newline()
            opened = w.line
            w.put(INDENT * (depth + 1) + "<")
            for k, init in enumerate(inits):
                w.newline()
                w.put(INDENT * (depth + 2) + tensor_type_text(init) + " ")
                self._token(init.name, g.path, "initializer")
                w.put(" = " + tensor_value_text(init) + ("," if k < len(inits) - 1 else ""))
            w.newline()
            w.put(INDENT * (depth + 1) + ">")
            block = (opened, w.line)
        w.newline()
        w.put(INDENT * depth + "{")
        w.newline()
        for node in g.nodes:
            self.node(node, depth + 1)
            w.newline()
        w.put(INDENT * depth + "}")
        self.smap.graphs[g.path] = GraphEntry(
            g.path, proto.name or "graph", start, w.line, "graph", initializers=block
        )

    def function(self, g: GraphRef) -> None:
        w = self.w
        fn = g.function
        assert fn is not None
        start = w.line
        w.put(f"<domain: {_quote(fn.domain)}, opset_import: {_opsets_text(list(fn.opset_import))}>")
        w.newline()
        w.put(f"{fn.name} (")
        for k, name in enumerate(fn.input):
            self._token(name, g.path, "graph-input")
            if k < len(fn.input) - 1:
                w.put(", ")
        w.put(") => (")
        for k, name in enumerate(fn.output):
            self._token(name, g.path, "graph-output")
            if k < len(fn.output) - 1:
                w.put(", ")
        w.put(")")
        w.newline()
        w.put("{")
        w.newline()
        for node in g.nodes:
            self.node(node, 1)
            w.newline()
        w.put("}")
        w.newline()
        self.smap.graphs[g.path] = GraphEntry(g.path, fn.name, start, w.line - 1, "function")

    def _signature(self, g: GraphRef, values: list[onnx.ValueInfoProto], role: str) -> None:
        for k, vi in enumerate(values):
            self.w.put(type_text(vi.type) + " ")
            self._token(vi.name, g.path, role)
            if k < len(values) - 1:
                self.w.put(", ")

    def _token(self, name: str, graph: str, role: str, node: str | None = None) -> None:
        w = self.w
        start = w.put(name)
        self.smap.tokens.append(Token(name, graph, len(w.lines), start, w.col, role, node))

    def _names(self, names: list[str], graph: str, role: str, node: str) -> None:
        """``a, b, c``, each a token (the per-node hot path, hence by hand)."""
        w, tokens = self.w, self.smap.tokens
        line = len(w.lines)
        for k, name in enumerate(names):
            if k:
                w.put(", ")
            start = w.put(name)
            tokens.append(Token(name, graph, line, start, w.col, role, node))

    def node(self, ref: NodeRef, depth: int) -> None:
        w = self.w
        n = ref.node
        path, graph = ref.path, ref.graph.path
        indent = INDENT * depth
        w.put(f"{indent}[{n.name}] " if n.name else indent)
        outs = list(n.output)
        self._names(outs, graph, "output", path)
        w.put(" = " if outs else "= ")
        op = n.op_type if ref.domain == DEFAULT_DOMAIN else f"{n.domain}.{n.op_type}"
        op_start = w.put(op)
        entry = NodeEntry(path, graph, len(w.lines), op_start, w.col, start=len(indent))
        self.smap.nodes[path] = entry
        if n.attribute:
            w.put(" <")
            for k, attr in enumerate(n.attribute):
                if k:
                    w.put(", ")
                self.attribute(ref, attr, depth)
            w.put(">")
        w.put(" (")
        self._names(list(n.input), graph, "input", path)
        w.put(")")
        entry.end_line = len(w.lines)

    def attribute(self, ref: NodeRef, attr: onnx.AttributeProto, depth: int) -> None:
        w = self.w
        A = onnx.AttributeProto
        if attr.ref_attr_name:
            w.put(f"{attr.name}: {_attr_type(attr)} = @{attr.ref_attr_name}")
            return
        if attr.type == A.GRAPH:
            w.put(f"{attr.name}: graph = ")
            self.graph(ref.subgraphs[attr.name], depth)
            return
        if attr.type == A.GRAPHS:
            w.put(f"{attr.name}: graphs = [")
            for k in range(len(attr.graphs)):
                self.graph(ref.subgraphs[f"{attr.name}[{k}]"], depth)
                if k < len(attr.graphs) - 1:
                    w.put(", ")
            w.put("]")
            return
        w.put(f"{attr.name}: {_attr_type(attr)} = {_attr_value(attr)}")


def _attr_type(attr: onnx.AttributeProto) -> str:
    return _ATTR_TYPES.get(attr.type, "undefined")


#: attribute type code -> ONNX text name (the enum lookup is slow under a profiler)
_ATTR_TYPES = {
    v.number: v.name.lower() for v in onnx.AttributeProto.AttributeType.DESCRIPTOR.values
}


def _attr_value(attr: onnx.AttributeProto) -> str:
    A = onnx.AttributeProto
    if attr.type == A.INT:
        return str(attr.i)
    if attr.type == A.FLOAT:
        return repr(attr.f)
    if attr.type == A.STRING:
        return _quote(attr.s.decode("utf-8", "replace"))
    if attr.type == A.INTS:
        return "[" + ", ".join(str(v) for v in attr.ints) + "]"
    if attr.type == A.FLOATS:
        return "[" + ", ".join(repr(v) for v in attr.floats) + "]"
    if attr.type == A.STRINGS:
        return "[" + ", ".join(_quote(s.decode("utf-8", "replace")) for s in attr.strings) + "]"
    if attr.type == A.TENSOR:
        return f"{tensor_type_text(attr.t)} {tensor_value_text(attr.t)}"
    if attr.type == A.TYPE_PROTO:
        return type_text(attr.tp)
    return "..."


def render_graph_view(index: ModelIndex) -> SourceMap:
    """The model as ONNX text with the node <-> line map (see module docstring)."""
    return _GraphViewPrinter(index).model(index.model)


# ---------------------------------------------------------------------------
# The user's own ONNX text


_WORD = r"[A-Za-z_][A-Za-z0-9_.\-/:]*"


def map_text_source(text: str, index: ModelIndex) -> SourceMap:
    """Locate the nodes and values of a parsed ``.onnxtxt`` model in its source text.

    The parser keeps nodes in source order and ``index.nodes`` lists them
    pre-order (a node, then the nodes of its subgraphs), which is source order
    too; so each node is searched for after the previous one. A node that cannot
    be found (exotic spelling) is left out of the map: its diagnostics then sit
    on the graph's first line.
    """
    smap = SourceMap(text=text)
    for g in index.graphs:
        smap.outer[g.path] = g.outer.path if g.outer is not None else None
    line_starts = [0]
    for newline in re.finditer("\n", text):
        line_starts.append(newline.end())

    def pos(offset: int) -> tuple[int, int]:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo, offset - line_starts[lo]

    masked = _mask_comments(text)
    cursor = 0
    graph_cursor: dict[str, int] = {}
    # graph headers: main first, functions by name later; subgraphs after their parent node
    main = index.main
    if main.proto is not None:
        _map_graph_header(smap, masked, main, main.proto.name, 0, pos)
        cursor = line_starts[smap.graphs[main.path].line]
    for ref in index.nodes:
        g = ref.graph
        if g.is_function and g.path not in graph_cursor:
            fn = g.function
            assert fn is not None
            m = re.search(rf"(?m)^\s*{re.escape(fn.name)}\s*\(", masked[cursor:])
            if m:
                start = cursor + m.start()
                _map_graph_header(smap, masked, g, fn.name, start, pos)
                cursor = start
            graph_cursor[g.path] = cursor
        outs = [re.escape(o) for o in ref.node.output]
        name_part = r"(?:\[[^\]]*\]\s*)?"
        outs_part = r"\s*,\s*".join(f"({o})" for o in outs)
        op = re.escape(ref.node.op_type)
        pattern = rf"{name_part}{outs_part}\s*=\s*((?:[A-Za-z_][\w.]*\.)?{op})\b"
        m = re.compile(pattern).search(masked, cursor)
        if m is None:
            continue
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
        if paren >= 0 and close >= 0:
            for im in re.finditer(_WORD, masked[paren + 1 : close]):
                name = im.group(0)
                if name in ref.node.input:
                    tl, tc = pos(paren + 1 + im.start())
                    smap.tokens.append(
                        Token(name, g.path, tl, tc, tc + len(name), "input", ref.path)
                    )
            entry.end_line = pos(close)[0]
        else:
            entry.end_line = entry.line
        for sub in ref.subgraphs.values():
            if sub.proto is not None:
                _map_graph_header(smap, masked, sub, sub.proto.name, m.end(), pos)
        cursor = m.end()
    return smap


def _mask_comments(text: str) -> str:
    """Blank out ``#`` comments (same length, so offsets still hold)."""
    return re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)


def _skip_attributes(text: str, at: int) -> int:
    i = at
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if i >= len(text) or text[i] != "<":
        return at
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = text.find('"', i + 1)
            if i < 0:
                return len(text)
        elif ch == "=" and text.startswith("=>", i):
            i += 1  # the arrow of a subgraph signature is not a closing bracket
        elif ch in "<{[":
            depth += 1
        elif ch in ">}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _map_graph_header(
    smap: SourceMap, text: str, g: GraphRef, name: str, start: int, pos: object
) -> None:
    """Record a graph's header line and the tokens of its inputs and initializers."""
    assert callable(pos)
    m = re.compile(rf"\b{re.escape(name or '')}\s*\(").search(text, start) if name else None
    if m is None:
        smap.graphs.setdefault(g.path, GraphEntry(g.path, name or "graph", 0, 0, "graph"))
        return
    body = text.find("{", m.end())
    end = body if body >= 0 else len(text)
    line, _ = pos(m.start())
    kind = "function" if g.is_function else "graph"
    smap.graphs[g.path] = GraphEntry(g.path, name, line, pos(end)[0], kind)
    defined = {*g.inputs, *g.initializers}
    for wm in re.finditer(_WORD, text[m.end() : end]):
        word = wm.group(0)
        if word in defined:
            tl, tc = pos(m.end() + wm.start())
            role = (
                "initializer" if word in g.initializers and word not in g.inputs else "graph-input"
            )
            smap.tokens.append(Token(word, g.path, tl, tc, tc + len(word), role))
            defined.discard(word)
        elif word in g.outputs:
            tl, tc = pos(m.end() + wm.start())
            smap.tokens.append(Token(word, g.path, tl, tc, tc + len(word), "graph-output"))

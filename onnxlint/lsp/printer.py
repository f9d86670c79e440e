"""The graph view of a binary model: the model printed as ONNX text, with its source map.

The syntax of ``onnx.printer`` (nested graphs inline, model-local functions after the
main graph, initializers and tensor attributes over ``MAX_INLINE_ELEMENTS`` elements
elided); each node's line and each value token are recorded while it writes, in the
``SourceMap`` shape ``textmap.map_text_source`` gives a user's own text.
"""

from __future__ import annotations

import bisect

import onnx

from onnxlint.index import DEFAULT_DOMAIN, GraphRef, ModelIndex, NodeRef
from onnxlint.lsp.sourcemap import GraphEntry, NodeEntry, SourceMap, Token
from onnxlint.tensors import inline_array

#: initializers and tensor attributes with more elements than this are elided
MAX_INLINE_ELEMENTS = 16
INDENT = "   "


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

    def model(self, model: onnx.ModelProto, metadata: onnx.ModelProto | None = None) -> SourceMap:
        w = self.w
        header = [
            f"ir_version: {model.ir_version}",
            f"opset_import: {_opsets_text(list(model.opset_import))}",
        ]
        meta = model if metadata is None else metadata
        for key in ("producer_name", "producer_version", "domain"):
            if getattr(meta, key):
                header.append(f"{key}: {_quote(getattr(meta, key))}")
        if meta.model_version:
            header.append(f"model_version: {meta.model_version}")
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
        kind = _attr_type(attr)
        if attr.ref_attr_name:
            w.put(f"{attr.name}: {kind} = @{attr.ref_attr_name}")
            return
        # the bodies themselves are the index's (``ref.subgraphs``, named as in graph paths)
        if kind == "graph":
            w.put(f"{attr.name}: graph = ")
            self.graph(ref.subgraphs[attr.name], depth)
            return
        if kind == "graphs":
            w.put(f"{attr.name}: graphs = [")
            for k in range(len(attr.graphs)):
                self.graph(ref.subgraphs[f"{attr.name}[{k}]"], depth)
                if k < len(attr.graphs) - 1:
                    w.put(", ")
            w.put("]")
            return
        w.put(f"{attr.name}: {kind} = {_attr_value(attr)}")


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


def render_graph_view(index: ModelIndex, metadata: onnx.ModelProto | None = None) -> SourceMap:
    """The model as ONNX text with the node <-> line map (see module docstring);
    ``metadata``: the producer, domain and model version to show instead of the model's
    (a result carried over to new bytes: ``carryover``)."""
    return _GraphViewPrinter(index).model(index.model, metadata)


def view_after_node_edit(
    prior: SourceMap, was: str, position: int, index: ModelIndex
) -> SourceMap | None:
    """The graph view of ``index``'s model, made from ``prior``, the view of the model that
    ``ModelIndex.after_node_edit`` moved ``index`` from, whose main-graph node ``position``
    (at path ``was`` there) was edited: every other node has its entry and path as before,
    neither node holds a body, and nothing else of the model differs. None: render it
    (``render_graph_view``).

    The printer writes each node without a body on a line of its own from that node's
    entry alone (its name, outputs, operator, attributes, inputs and path), and every
    other line from the graphs' headers and the other nodes: the view is ``prior``'s with
    that one line, its tokens and its node's entry made anew."""
    main = index.main
    if not 0 <= position < len(main.nodes):
        return None
    ref = main.nodes[position]
    old = prior.nodes.get(was)
    if ref.subgraphs or old is None or old.graph != main.path or old.end_line != old.line:
        return None
    printer = _GraphViewPrinter(index)
    printer.node(ref, 1)
    w = printer.w
    if w.lines or list(printer.smap.nodes) != [ref.path]:
        return None
    line = old.line
    text = prior.text
    start = 0
    for _ in range(line):  # the line's offset: the printer keeps no line starts
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    end = text.find("\n", start)
    if end < 0:
        return None
    entry = printer.smap.nodes[ref.path]
    entry.line = entry.end_line = line
    out = SourceMap(text=text[:start] + "".join(w.parts).rstrip() + text[end:])
    out.outer = dict(prior.outer)
    out.graphs = dict(prior.graphs)
    out.nodes = {
        (ref.path if path == was else path): (entry if path == was else e)
        for path, e in prior.nodes.items()
    }
    tokens = prior.tokens
    lo = bisect.bisect_left(tokens, line, key=lambda t: t.line)
    hi = bisect.bisect_right(tokens, line, key=lambda t: t.line)
    made = [t._replace(line=line) for t in printer.smap.tokens]
    out.tokens = [*tokens[:lo], *made, *tokens[hi:]]
    return out

"""One version of the model the prediction works on: as exported, or after ORT's level-1.

:class:`LevelGraph` holds the index, the value types a session sees and, per graph, the
nodes ORT partitions in ORT's topological order (cached on first use).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from onnxlint.analyses.elements import constant_elems, tensor_elems
from onnxlint.analyses.session_types import infer_session_types
from onnxlint.analyses.shapes import dtype_name
from onnxlint.analyses.value_types import ValueType, vi_type
from onnxlint.diagnostics import Location
from onnxlint.index import (
    GraphRef,
    ModelIndex,
    NodeRef,
    iter_graphs,
    subgraphs,
    topological_order,
)
from onnxlint.tensors import inline_array, restore_data

EXPORTED = "exported"
OPTIMIZED = "optimized"


@dataclass(eq=False)
class LevelGraph:
    """One version of the model (as exported, or after level-1) with types and constants."""

    level: str
    model: onnx.ModelProto
    index: ModelIndex
    #: graph path -> value name -> type (a table per graph: one key tuple per value of a
    #: 100k-node graph held 6 MB)
    types: dict[str, dict[str, ValueType]] = field(default_factory=dict)
    #: this level's node path -> the node path in the user's model (same for ``exported``)
    source_path: dict[str, str] = field(default_factory=dict)
    #: the user's node path -> its place top-down in the model as written (partitions are
    #: numbered in this order, as a reader meets their first node)
    source_rank: dict[str, int] = field(default_factory=dict)
    #: paths of the nodes an ONNX function op expands into when no EP claims the op: ORT
    #: inlines it only after every EP has chosen its nodes, and partitions again
    inlined_late: frozenset[str] = frozenset()
    #: graph path -> names of values known before the run that are no initializers,
    #: computed from constants and static shapes alone (the lint's dataflow analysis);
    #: kept for what capability rules read them for, an If's condition
    known_values: dict[str, frozenset[str]] = field(default_factory=dict)
    note: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the index holds onnx OpSchema objects, which do not pickle (``--jobs`` sends
        # reports between processes); it is rebuilt from the model on the other side
        state = dict(self.__dict__)
        state.pop("index", None)
        state.pop("_nodes", None)
        state.pop("_orders", None)
        state.pop("_positions", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # the index is rebuilt when something reads it (:meth:`__getattr__`): the parent of
        # ``--jobs`` unpickles every report, and its text output reads no index (two index
        # builds per report were half of its unpickling)
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: the index of an unpickled graph
        if name != "index" or "model" not in self.__dict__:
            raise AttributeError(name)
        index = self.__dict__["index"] = ModelIndex(self.__dict__["model"])
        return index

    def graphs(self) -> list[GraphRef]:
        """Graphs the partitioner sees: the main graph and control-flow bodies, not functions."""
        return [g for g in self.index.graphs if not g.is_function]

    def nodes(self, graph: GraphRef) -> list[NodeRef]:
        """Nodes ORT partitions: Constant nodes are initializers by then (a shared list: don't
        modify it)."""
        cache: dict[str, list[NodeRef]] = self.__dict__.setdefault("_nodes", {})
        got = cache.get(graph.path)
        if got is None:
            got = cache[graph.path] = [n for n in graph.nodes if not is_constant_node(n)]
        return got

    def positions(self, graph: GraphRef) -> dict[str, int]:
        """Node path -> index in :meth:`order`."""
        cache: dict[str, dict[str, int]] = self.__dict__.setdefault("_positions", {})
        got = cache.get(graph.path)
        if got is None:
            got = cache[graph.path] = {n.path: i for i, n in enumerate(self.order(graph))}
        return got

    def order(self, graph: GraphRef) -> list[NodeRef]:
        """ORT's topological order of :meth:`nodes`, computed once per graph (CPU preference
        per EP and the partitioner all walk it).

        The level-1 graph is the file ORT saved, whose nodes ORT wrote in that very order
        (its node indices, which nodes created by its fusions change, are not in the file);
        the exported graph's order is computed from the file's node indices.
        """
        cache: dict[str, list[NodeRef]] = self.__dict__.setdefault("_orders", {})
        got = cache.get(graph.path)
        if got is None:
            nodes = self.nodes(graph)
            got = list(nodes) if self.level == OPTIMIZED else topological_order(graph, nodes)
            cache[graph.path] = got
        return got

    def value_type(self, graph: GraphRef, name: str) -> ValueType:
        g: GraphRef | None = graph
        types = self.types
        while g is not None:
            table = types.get(g.path)
            vt = table.get(name) if table is not None else None
            if vt is not None:
                return vt
            if name in g.initializers:
                t = g.initializers[name]
                return ValueType(dtype_name(t.data_type), tuple(int(d) for d in t.dims))
            g = g.outer
        return ValueType()

    @property
    def inputs_override_initializers(self) -> bool:
        """From IR 4 an initializer also listed as a graph input is a default the caller
        may override (not a constant); below IR 4 every initializer is listed there."""
        return self.model.ir_version >= 4

    def is_initializer(self, graph: GraphRef, name: str) -> bool:
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers and (
                name not in g.input_set or not self.inputs_override_initializers
            ):
                return True
            producer = g.producers.get(name)
            if producer is not None:
                return is_constant_node(producer)
            g = g.outer
        return False

    def initializer_elements(self, graph: GraphRef, name: str) -> int | None:
        """Element count of an initializer or Constant output; None when not constant."""
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers:
                n = 1
                for d in g.initializers[name].dims:
                    n *= int(d)
                return n
            producer = g.producers.get(name)
            if producer is not None:
                if not is_constant_node(producer):
                    return None
                shape = self.value_type(graph, name).shape
                if shape is None or not all(isinstance(d, int) for d in shape):
                    return None
                n = 1
                for d in shape:
                    n *= int(d)  # type: ignore[arg-type]
                return n
            g = g.outer
        return None

    def int_constant(self, graph: GraphRef, name: str) -> tuple[int, ...] | None:
        """The elements of a small integer initializer or Constant output (at most
        ``MAX_TRACKED_ELEMENTS``, inline data only); None otherwise."""
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers:
                if not self.is_initializer(g, name):
                    return None
                got = tensor_elems(g.initializers[name])
                return None if got is None else tuple(int(v) for v in got if isinstance(v, int))
            producer = g.producers.get(name)
            if producer is not None:
                got = constant_elems(producer.node) if is_constant_node(producer) else None
                return None if got is None else tuple(int(v) for v in got if isinstance(v, int))
            g = g.outer
        return None

    def float_constant(self, graph: GraphRef, name: str) -> np.ndarray | None:
        """The elements of a small floating-point initializer or Constant output (at most
        ``MAX_FLOAT_ELEMENTS``, inline data only), as an array; None otherwise."""
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers:
                if not self.is_initializer(g, name):
                    return None
                return _float_array(g.initializers[name])
            producer = g.producers.get(name)
            if producer is not None:
                if not is_constant_node(producer):
                    return None
                for a in producer.node.attribute:
                    if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                        return _float_array(a.t)
                    if a.name == "value_float":
                        return np.array([a.f], dtype=np.float32)
                    if a.name == "value_floats":
                        return np.array(a.floats, dtype=np.float32)
                return None
            g = g.outer
        return None

    def is_graph_input(self, graph: GraphRef, name: str) -> bool:
        if name not in graph.input_set:
            return False
        return name not in graph.initializers or self.inputs_override_initializers


#: the most elements ``LevelGraph.float_constant`` reads (a per-channel scale has one per
#: output channel)
MAX_FLOAT_ELEMENTS = 65_536

_FLOAT_TYPES = frozenset(
    {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
     onnx.TensorProto.BFLOAT16}
)  # fmt: skip


def _float_array(t: onnx.TensorProto) -> np.ndarray | None:
    if t.data_type not in _FLOAT_TYPES:
        return None
    return inline_array(t, max_elements=MAX_FLOAT_ELEMENTS)


def is_constant_node(node: NodeRef) -> bool:
    return node.op_type == "Constant" and node.domain == "ai.onnx"


#: ``text_ranks`` per index, with the node and graph counts it was computed at: both
#: levels of a lint map to the same index (the model as written), so it is walked once
_RANKS: weakref.WeakKeyDictionary[ModelIndex, tuple[int, int, dict[str, int]]] = (
    weakref.WeakKeyDictionary()
)
_RANKS_LOCK = threading.Lock()


def text_ranks(index: ModelIndex) -> dict[str, int]:
    """Node path -> place top-down in the model as written: a graph's nodes in file order,
    each followed by the nodes of its bodies (as ONNX text and the graph view print them).

    Computed once per index (and again if nodes or graphs were added to it); the dict is
    shared, so callers only read it."""
    stamp = (len(index.nodes), len(index.graphs))
    with _RANKS_LOCK:
        hit = _RANKS.get(index)
    if hit is not None and hit[:2] == stamp:
        return hit[2]
    ranks = _text_ranks(index)
    with _RANKS_LOCK:
        _RANKS[index] = (*stamp, ranks)
    return ranks


def _text_ranks(index: ModelIndex) -> dict[str, int]:
    bodies: dict[int, list[GraphRef]] = {}
    for g in index.graphs:
        if g.parent is not None and not g.is_function:
            bodies.setdefault(id(g.parent), []).append(g)
    ranks: dict[str, int] = {}
    stack = [iter(index.main.nodes)]  # no recursion: bodies nest without limit
    while stack:
        n = next(stack[-1], None)
        if n is None:
            stack.pop()
            continue
        ranks[n.path] = len(ranks)
        stack.extend(iter(g.nodes) for g in reversed(bodies.get(id(n), [])))
    return ranks


def build_level_graph(
    model: onnx.ModelProto,
    level: str,
    source: ModelIndex | None = None,
    inferred: onnx.ModelProto | None = None,
    source_index: ModelIndex | None = None,
    weights_left_out: dict[str, onnx.TensorProto] | None = None,
    cut: frozenset[str] = frozenset(),
) -> LevelGraph:
    """Index ``model`` after shape inference; map node paths back to ``source`` by name.

    ``inferred``: ``model`` already through shape inference (the shared Shapes analysis).
    ``source_index``: an index of ``model`` itself (the lint's own); used instead of a
    second index when the inferred copy has the same graphs and nodes.
    ``weights_left_out``: the data of large initializers that ``inferred`` lacks (read for
    its types alone, it needs none); put back when the level graph keeps the copy.
    Types are those ORT resolves at session creation (:func:`infer_session_types`);
    ``cut``: values declared as ORT merged them (``declared_merge.merged_names``).
    """
    if inferred is None:
        inferred = infer_session_types(model, cut)
    if inferred is not model:
        inferred.ir_version = (
            model.ir_version
        )  # infer_session_types may bump it; constness depends on it
    index = reuse if (reuse := _same_structure(source_index, inferred)) else ModelIndex(inferred)
    if index is not source_index and weights_left_out:
        restore_data(inferred, weights_left_out)  # the copy is the level graph's model
    # on the lint's own index the graph is the model itself; the inferred copy is only
    # read for its types below and then let go
    lg = LevelGraph(level=level, model=model if index is source_index else inferred, index=index)
    if index is source_index:
        # the lint's own index (the model as written): types come from the inferred copy,
        # walked graph by graph in the index's order
        seen: dict[ValueType, ValueType] = {}  # one object per distinct type
        # a type read once per distinct serialized TypeProto (its bytes are all vi_type
        # reads): most values of a large graph repeat a handful of types
        by_bytes: dict[bytes, ValueType] = {}
        for g, proto in zip(index.graphs, _graph_protos(inferred), strict=True):
            if isinstance(proto, onnx.GraphProto):  # function signatures carry no types
                table = lg.types.setdefault(g.path, {})
                for vi in (*proto.input, *proto.output, *proto.value_info):
                    key = vi.type.SerializeToString()
                    vt = by_bytes.get(key)
                    if vt is None:
                        vt = vi_type(vi)
                        vt = by_bytes[key] = seen.setdefault(vt, vt)
                    table.setdefault(vi.name, vt)
    else:
        for g in index.graphs:
            table = lg.types.setdefault(g.path, {})
            for name, vi in g.value_info.items():
                table[name] = vi_type(vi)
    lg.source_rank = text_ranks(source if source is not None else index)
    if source is None:
        lg.source_path = {n.path: n.path for n in index.nodes}
    else:
        by_name: dict[tuple[str, str], str] = {}
        for n in source.nodes:
            if n.name:
                by_name.setdefault((n.name, n.op_type), n.path)
        callers = {n.label: n.path for n in source.main.nodes}
        callers.update({n.name: n.path for n in source.nodes if n.name})
        # unnamed nodes keep no name in ORT's output either: pair them by op type, in order
        unnamed: dict[tuple[str, str], list[str]] = {}
        for n in source.nodes:
            if not n.name and not n.graph.is_function:
                unnamed.setdefault((n.graph.path.split("/")[0], n.op_type), []).append(n.path)
        for n in index.nodes:
            hit = by_name.get((n.name, n.op_type)) if n.name else None
            if hit is None and "/" in n.name:
                # a node inlined from a function call ("swish0/Sigmoid"): the call is its place
                hit = callers.get(n.name.split("/", 1)[0])
            if hit is None and not n.name:
                queue = unnamed.get((n.graph.path.split("/")[0], n.op_type))
                hit = queue.pop(0) if queue else None
            if hit is not None:
                lg.source_path[n.path] = hit
    return lg


def _graph_protos(model: onnx.ModelProto) -> list[onnx.GraphProto | onnx.FunctionProto]:
    """The model's graphs in :class:`ModelIndex` order: each graph, then the bodies of its
    nodes depth first; then each function the same way."""
    out: list[onnx.GraphProto | onnx.FunctionProto] = [*iter_graphs(model.graph)]
    for fn in model.functions:
        out.append(fn)
        out += [g for n in fn.node for _, sub in subgraphs(n) for g in iter_graphs(sub)]
    return out


def _same_structure(index: ModelIndex | None, model: onnx.ModelProto) -> ModelIndex | None:
    """``index`` when it describes ``model``'s graphs node for node (same counts, op types
    and names in the same order), else None."""
    if index is None:
        return None
    protos = _graph_protos(model)
    if len(protos) != len(index.graphs):
        return None
    for g, proto in zip(index.graphs, protos, strict=True):
        nodes = proto.node
        if len(nodes) != len(g.nodes):
            return None
        for ref, n in zip(g.nodes, nodes, strict=True):
            if ref.node.op_type != n.op_type or ref.node.name != n.name:
                return None
    return index


def source_location(lg: LevelGraph, node: NodeRef, source: ModelIndex) -> Location:
    """Where ``node`` of a level graph sits in the user's model.

    Nodes ORT (or inlining) created have no position in the user's file: they
    are named, without an index.
    """
    src = lg.source_path.get(node.path)
    if src is not None:
        ref = source.node_by_path(src)
        if ref is not None:
            return ref.location()
    return Location(graph=node.graph.path, node_name=node.name or None, op_type=node.op_type)

"""The model index: one pass over the model that every rule and analysis shares.

It gives each node a stable location: its real name when that identifies it,
quoted when it holds path syntax (``main/"/model/layer.0/MatMul"``), a synthetic
label only when it is unnamed or duplicated (``main/loop_3:body/Add_7``; see
:mod:`onnxlint.names`), maps values to producers and consumers, keeps
initializers and value infos per graph, enters If/Loop/Scan bodies and
model-local functions, and resolves the operator revision each node uses
(the ``since_version`` of its schema at the imported opset).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import is_
from typing import TypeVar

import onnx
from onnx import defs

from onnxlint.diagnostics import Location
from onnxlint.names import is_synthetic, label_table, relabelled
from onnxlint.reverse_dfs import reverse_dfs_order
from onnxlint.schema_registry import SCHEMAS_LOCK

DEFAULT_DOMAIN = "ai.onnx"
_V = TypeVar("_V")


def norm_domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", "ai.onnx") else domain


#: the domains whose operators ONNX itself defines
STANDARD_DOMAINS = (DEFAULT_DOMAIN, "ai.onnx.ml")


@lru_cache(maxsize=4096)
def resolve_schema(op_type: str, domain: str, opset: int) -> onnx.defs.OpSchema | None:
    """The schema a node resolves to at the imported opset, or None when unknown."""
    try:
        with SCHEMAS_LOCK:  # never a schema lent to an inference in another thread
            return defs.get_schema(op_type, opset, "" if domain == DEFAULT_DOMAIN else domain)
    except defs.SchemaError:
        return None
    except Exception:
        return None


@dataclass(eq=False, slots=True)
class NodeRef:
    node: onnx.NodeProto
    graph: GraphRef
    index: int
    label: str
    schema: onnx.defs.OpSchema | None
    #: subgraphs owned by this node's attributes, by attribute name
    subgraphs: dict[str, GraphRef] = field(default_factory=dict)
    #: the stable location ``main/Loop_3:body/Add_7``; every analysis keys its tables by it, so
    #: it is computed once (Python 3.11's cached_property takes a lock on every first read)
    path: str = field(init=False, repr=False)
    #: input/output names, read once: every read of a protobuf repeated field makes new strings
    _inputs: tuple[str, ...] = field(init=False, repr=False)
    _outputs: tuple[str, ...] = field(init=False, repr=False)
    #: the operator and its domain (normalised: ``""`` and ``ai.onnx`` are one), read once
    #: too: the rules, the facts and the partitioner ask millions of times on a large graph
    op_type: str = field(init=False, repr=False)
    domain: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = f"{self.graph.path}/{self.label}"
        # interned: a name is one string object however many nodes read it (the producer's
        # output, every consumer's input and the index's dict keys)
        self._inputs = tuple(map(sys.intern, self.node.input))
        self._outputs = tuple(map(sys.intern, self.node.output))
        self.op_type = sys.intern(self.node.op_type)
        self.domain = norm_domain(self.node.domain)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def since_version(self) -> int | None:
        return self.schema.since_version if self.schema is not None else None

    @property
    def opset(self) -> int | None:
        return self.graph.opsets.get(self.domain)

    @property
    def inputs(self) -> list[str]:
        return list(self._inputs)

    @property
    def input_names(self) -> tuple[str, ...]:
        """The input names without a copy (``inputs`` returns a list the caller may change)."""
        return self._inputs

    @property
    def outputs(self) -> list[str]:
        return list(self._outputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        """The output names without a copy (``outputs`` returns a list the caller may change)."""
        return self._outputs

    def location(self, tensor: str | None = None, slot: str | None = None) -> Location:
        return Location(
            graph=self.graph.path,
            node_name=self.node.name or None,
            node_index=self.index,
            op_type=self.node.op_type,
            tensor=tensor,
            slot=slot,
            label=self.label,
        )

    def attr(self, name: str) -> onnx.AttributeProto | None:
        for a in self.node.attribute:
            if a.name == name:
                return a
        return None

    def __repr__(self) -> str:
        return f"NodeRef({self.path} {self.op_type})"

    def moved(self, node: onnx.NodeProto, graph: GraphRef) -> NodeRef:
        """This entry for ``node``, an equal node of an equal graph ``graph`` in another
        copy of the model: nothing is read from the node again."""
        ref: NodeRef = object.__new__(NodeRef)
        ref.node, ref.graph, ref.index, ref.label = node, graph, self.index, self.label
        ref.schema, ref.subgraphs, ref.path = self.schema, {}, self.path
        ref._inputs, ref._outputs = self._inputs, self._outputs
        ref.op_type, ref.domain = self.op_type, self.domain
        return ref


@dataclass(eq=False)
class GraphRef:
    path: str
    inputs: list[str]
    outputs: list[str]
    opsets: dict[str, int]
    depth: int
    proto: onnx.GraphProto | None = None  # None for functions
    function: onnx.FunctionProto | None = None
    parent: NodeRef | None = None
    outer: GraphRef | None = None
    nodes: list[NodeRef] = field(default_factory=list)
    initializers: dict[str, onnx.TensorProto] = field(default_factory=dict)
    value_info: dict[str, onnx.ValueInfoProto] = field(default_factory=dict)
    producers: dict[str, NodeRef] = field(default_factory=dict)
    consumers: dict[str, list[NodeRef]] = field(default_factory=dict)
    #: names this body reads from enclosing scopes (empty for the main graph and functions)
    captured: frozenset[str] = frozenset()
    #: how many nodes bear each name, and the synthetic labels given (``names.label_table``)
    name_counts: Counter[str] = field(default_factory=Counter)
    synthetic: set[str] = field(default_factory=set)
    #: :func:`topological_order`'s last answer here: the nodes it was asked for, the order
    order_memo: tuple[tuple[NodeRef, ...], tuple[NodeRef, ...]] | None = field(
        default=None, repr=False
    )
    #: ``inputs`` and ``outputs`` as sets, for membership (below IR 4 every initializer is
    #: also a graph input: hundreds of names, read for every node input); both lists are
    #: fixed once the graph is indexed
    input_set: frozenset[str] = field(init=False, repr=False)
    output_set: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.input_set = frozenset(self.inputs)
        self.output_set = frozenset(self.outputs)

    @property
    def is_function(self) -> bool:
        return self.function is not None

    def is_defined_here(self, name: str) -> bool:
        return name in self.producers or name in self.initializers or name in self.input_set

    def resolves(self, name: str) -> bool:
        """Whether ``name`` is visible in this graph (here or in an enclosing scope)."""
        g: GraphRef | None = self
        while g is not None:
            if g.is_defined_here(name):
                return True
            g = g.outer
        return False

    def location(self) -> Location:
        return Location(graph=self.path)


class ModelIndex:
    """Built once per model; read by every rule and analysis."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self.opsets[norm_domain(imp.domain)] = imp.version
        self.graphs: list[GraphRef] = []
        self.nodes: list[NodeRef] = []
        self._by_path: dict[str, NodeRef] | None = None
        self._by_path_len = 0
        self._graphs_by_path: dict[str, GraphRef] | None = None
        self.functions: dict[tuple[str, str], GraphRef] = {}
        self.main = self._add_graph(model.graph, "main", self.opsets, depth=0)
        for fn in model.functions:
            fn_opsets = {norm_domain(i.domain): i.version for i in fn.opset_import}
            g = GraphRef(
                path=f"fn:{fn.domain}.{fn.name}",
                inputs=list(fn.input),
                outputs=list(fn.output),
                opsets=fn_opsets or dict(self.opsets),
                depth=0,
                function=fn,
            )
            self.graphs.append(g)
            self.functions[(fn.domain, fn.name)] = g
            self._add_nodes(g, fn.node)

    # -- construction -----------------------------------------------------------------
    def _add_graph(
        self,
        graph: onnx.GraphProto,
        path: str,
        opsets: dict[str, int],
        depth: int,
        parent: NodeRef | None = None,
        outer: GraphRef | None = None,
    ) -> GraphRef:
        g = GraphRef(
            path=path,
            inputs=[i.name for i in graph.input],
            outputs=[o.name for o in graph.output],
            opsets=opsets,
            depth=depth,
            proto=graph,
            parent=parent,
            outer=outer,
        )
        self.graphs.append(g)
        _read_tables(g, graph)
        self._add_nodes(g, graph.node)
        return g

    def _add_nodes(self, g: GraphRef, nodes: onnx.NodeProto | list[onnx.NodeProto]) -> None:
        labels, g.name_counts, g.synthetic = label_table([(n.name, n.op_type) for n in nodes])
        for i, n in enumerate(nodes):
            ref = _new_ref(n, g, i, labels[i])
            self._link(g, ref)
            for sub_name, sub in subgraphs(n):
                sub_ref = self._add_graph(
                    sub, f"{ref.path}:{sub_name}", g.opsets, g.depth + 1, parent=ref, outer=g
                )
                self._captured(g, ref, sub_name, sub_ref, _outer_references(sub_ref))

    def _link(self, g: GraphRef, ref: NodeRef) -> None:
        g.nodes.append(ref)
        self.nodes.append(ref)
        for out in ref._outputs:
            if out:
                g.producers.setdefault(out, ref)
        for inp in ref._inputs:
            if inp:
                g.consumers.setdefault(inp, []).append(ref)

    @staticmethod
    def _captured(
        g: GraphRef, ref: NodeRef, sub_name: str, sub: GraphRef, captured: frozenset[str]
    ) -> None:
        ref.subgraphs[sub_name] = sub
        sub.captured = captured
        # values captured from the enclosing scope count as consumed there
        for name in captured:
            g.consumers.setdefault(name, []).append(ref)

    # -- one node edited ----------------------------------------------------------------
    @classmethod
    def after_node_edit(
        cls, prior: ModelIndex, model: onnx.ModelProto, position: int
    ) -> ModelIndex | None:
        """The index of ``model``, which is ``prior``'s model with main-graph node
        ``position`` replaced by one that holds no graph (the caller vouches that nothing
        else differs), built from ``prior``'s entries without reading the other nodes
        again. None when the edit changes another entry: the node's inputs or outputs
        differ, or another node's label would change (then index ``model`` afresh)."""
        main = prior.main
        nodes = model.graph.node
        if not 0 <= position < len(main.nodes) or len(nodes) != len(main.nodes):
            return None
        was, node = main.nodes[position], nodes[position]
        if was.subgraphs or subgraphs(node):
            return None
        if tuple(node.input) != was._inputs or tuple(node.output) != was._outputs:
            return None
        names = (was.node.name, was.node.op_type), (node.name, node.op_type)
        label = relabelled(main.name_counts, main.synthetic, position, *names)
        functions = [g for g in prior.graphs if g.function is not None]
        if label is None or len(functions) != len(model.functions):
            return None
        self = cls.__new__(cls)
        self.model = model
        self.opsets = {norm_domain(imp.domain): imp.version for imp in model.opset_import}
        self.graphs, self.nodes, self.functions = [], [], {}
        self._by_path, self._by_path_len, self._graphs_by_path = None, 0, None
        self.main = self._moved_graph(main, model.graph, self.opsets, (position, label))
        counts = self.main.name_counts = Counter(main.name_counts)
        for name, step in ((names[0][0], -1), (names[1][0], 1)):
            if name:
                counts[name] += step
                if not counts[name]:
                    del counts[name]
        taken = self.main.synthetic = set(main.synthetic)
        if is_synthetic(was.label, was.node.name):
            taken.discard(was.label)
        if is_synthetic(label, node.name):
            taken.add(label)
        for g_was, fn in zip(functions, model.functions, strict=True):
            g = self._moved_graph(g_was, fn, dict(g_was.opsets))
            self.functions[(fn.domain, fn.name)] = g
        return self

    def _moved_graph(
        self,
        was: GraphRef,
        proto: onnx.GraphProto | onnx.FunctionProto,
        opsets: dict[str, int],
        edit: tuple[int, str] | None = None,
        parent: NodeRef | None = None,
        outer: GraphRef | None = None,
    ) -> GraphRef:
        """``was`` for ``proto``, the same graph (or function) in another copy of the model,
        but for node ``edit[0]``, which gets the label ``edit[1]`` and is read anew."""
        graph = proto if isinstance(proto, onnx.GraphProto) else None
        g = GraphRef(
            path=was.path,
            inputs=list(was.inputs),
            outputs=list(was.outputs),
            opsets=opsets,
            depth=was.depth,
            proto=graph,
            function=proto if graph is None else None,
            parent=parent,
            outer=outer,
            name_counts=was.name_counts,
            synthetic=was.synthetic,
        )
        self.graphs.append(g)
        if graph is not None:
            values = (*graph.input, *graph.output, *graph.value_info)
            inits = (
                None
                if graph.sparse_initializer
                else _same_keys(was.initializers, graph.initializer)
            )
            vis = _same_keys(was.value_info, values)
            if inits is None or vis is None:
                _read_tables(g, graph)  # some names repeat: read them as a fresh index does
            else:
                g.initializers, g.value_info = inits, vis
        at, label = edit if edit is not None else (-1, "")
        nodes, everything = g.nodes, self.nodes
        for k, (old, n) in enumerate(zip(was.nodes, proto.node, strict=True)):
            ref = _new_ref(n, g, k, label) if k == at else old.moved(n, g)
            nodes.append(ref)
            everything.append(ref)
            if old.subgraphs:
                for sub_name, sub in subgraphs(n):
                    sub_was = old.subgraphs[sub_name]
                    sub_ref = self._moved_graph(sub_was, sub, g.opsets, None, ref, g)
                    ref.subgraphs[sub_name] = sub_ref
                    sub_ref.captured = sub_was.captured
        # the same values with the same readers and writers (an edited node keeps its inputs
        # and outputs): each entry is ``was``'s, its node at the same position here
        g.producers = {name: nodes[p.index] for name, p in was.producers.items()}
        g.consumers = {
            name: [nodes[r.index] for r in readers] for name, readers in was.consumers.items()
        }
        return g

    # -- queries ----------------------------------------------------------------------
    def iter_nodes(self, include_functions: bool = True) -> Iterator[NodeRef]:
        for n in self.nodes:
            if include_functions or not n.graph.is_function:
                yield n

    def node_by_path(self, path: str) -> NodeRef | None:
        # a dict built on first use: rules and the partition mapping look up every node,
        # and a scan per lookup made a 10k-node lint quadratic (benchmarks/, docs/performance.md)
        if self._by_path is None or self._by_path_len != len(self.nodes):
            self._by_path = {}
            for n in self.nodes:
                self._by_path.setdefault(n.path, n)
            self._by_path_len = len(self.nodes)
        return self._by_path.get(path)

    def graph_by_path(self, path: str | None) -> GraphRef | None:
        if self._graphs_by_path is None or len(self._graphs_by_path) < len(self.graphs):
            self._graphs_by_path = {g.path: g for g in self.graphs}
        return self._graphs_by_path.get(path) if path is not None else None

    @property
    def main_graph_nodes(self) -> list[NodeRef]:
        return self.main.nodes


def _new_ref(n: onnx.NodeProto, g: GraphRef, i: int, label: str) -> NodeRef:
    domain = norm_domain(n.domain)
    opset = g.opsets.get(domain)
    schema = resolve_schema(n.op_type, domain, opset) if opset is not None else None
    return NodeRef(node=n, graph=g, index=i, label=label, schema=schema)


def _read_tables(g: GraphRef, graph: onnx.GraphProto) -> None:
    """Fill ``g``'s initializers (the last of a repeated name wins, sparse ones after) and
    value infos (the first wins: inputs, outputs, then ``value_info``) from ``graph``."""
    for init in graph.initializer:
        g.initializers[init.name] = init
    for sparse in graph.sparse_initializer:
        g.initializers[sparse.values.name] = sparse.values
    for vi in (*graph.input, *graph.output, *graph.value_info):
        g.value_info.setdefault(vi.name, vi)


def _same_keys(was: dict[str, _V], protos: Sequence[_V]) -> dict[str, _V] | None:
    """``was``'s keys for ``protos``, the same entries in another copy of the model, when
    each entry has its own key (``was`` was filled in order, one key per entry); None when
    some keys repeat (then read the names)."""
    if len(was) != len(protos):
        return None
    return dict(zip(was, protos, strict=True))


def input_dim_params(model: onnx.ModelProto | None) -> frozenset[str]:
    """The named (symbolic) dims the main graph's inputs declare: the dims a user can pin
    (``--dim``, ``assume-dims``); the others follow from them or are computed at run time."""
    if model is None:
        return frozenset()
    return frozenset(
        d.dim_param
        for vi in model.graph.input
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
        for d in vi.type.tensor_type.shape.dim
        if d.HasField("dim_param") and d.dim_param
    )


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """A node's bodies (If branches, Loop/Scan bodies) under the names the index gives them
    in graph paths: ``then_branch``, ``body``, ``graphs[1]``. The one place a walk learns
    which attributes hold graphs."""
    out: list[tuple[str, onnx.GraphProto]] = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            out.append((attr.name, attr.g))
        elif attr.type == onnx.AttributeProto.GRAPHS:
            out += [(f"{attr.name}[{k}]", sg) for k, sg in enumerate(attr.graphs)]
    return out


#: the attribute types whose value is a graph or a list of graphs
GRAPH_ATTRIBUTE_TYPES = frozenset({onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS})


def stored_graphs(
    attributes: Iterable[onnx.AttributeProto],
) -> Iterator[tuple[str, int | None, onnx.GraphProto]]:
    """Every graph the attributes hold (a node's, or a function's defaults), as ``(attribute
    name, position in graphs or None for g, graph)``, read from the fields whatever the
    attribute's type says.

    For the walks over a raw model before it is checked (the loader's limits, the tensor
    walk, the checker's copy): a hostile model may set ``g`` on an attribute typed INT,
    and ORT or onnx could read the field the type does not name. Everything after the
    load walks :func:`subgraphs` (the index) instead."""
    for attr in attributes:
        if attr.HasField("g"):
            yield attr.name, None, attr.g
        for k, sub in enumerate(attr.graphs):
            yield attr.name, k, sub


def differs_in_names_only(a: onnx.NodeProto, b: onnx.NodeProto) -> bool:
    """Whether two nodes are the same but for their name and doc string."""
    x, y = onnx.NodeProto(), onnx.NodeProto()
    x.CopyFrom(a)
    y.CopyFrom(b)
    for n in (x, y):
        n.ClearField("name")
        n.ClearField("doc_string")
    return x.SerializeToString(deterministic=True) == y.SerializeToString(deterministic=True)


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every If/Loop/Scan body nested in it, depth first (the index's order)."""
    yield graph
    for node in graph.node:
        if node.attribute:  # most nodes have none: no call for them (12 walks per lint)
            for _, sub in subgraphs(node):
                yield from iter_graphs(sub)


def _outer_references(g: GraphRef) -> frozenset[str]:
    """Names a subgraph reads that it does not define itself (captured from outside).

    Nested bodies are indexed first, so their own ``captured`` sets are already known."""
    names: set[str] = set()
    for n in g.nodes:
        for inp in n.input_names:
            if inp and not g.is_defined_here(inp):
                names.add(inp)
        for sub in n.subgraphs.values():
            names |= {x for x in sub.captured if not g.is_defined_here(x)}
    return frozenset(names)


def is_unknown_standard_op(
    node: NodeRef, functions: dict[tuple[str, str], GraphRef] | None = None
) -> bool:
    """True when ``node`` names an operator of a standard domain that does not exist at
    the opset its graph imports (OL204's finding, the cause of whatever follows from it);
    a call of a model-local function in ``functions`` is not one."""
    if node.schema is not None or node.domain not in STANDARD_DOMAINS:
        return False
    if node.domain not in node.graph.opsets:
        return False
    return functions is None or (node.node.domain, node.op_type) not in functions


# ---------------------------------------------------------------------------
# ORT's topological order


def node_edges(
    g: GraphRef, nodes: Sequence[NodeRef], captured: bool = True
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Node-to-node edges (inputs and values captured by bodies), as ORT's graph has them;
    without ``captured``, the explicit inputs only.

    Each list keeps one entry per input that names the producer (a node reading a value
    twice has its producer twice), in input order, captured names last and sorted."""
    preds: dict[str, list[str]] = {}
    succs: dict[str, list[str]] = {}
    for n in nodes:
        preds[n.path] = []
        succs[n.path] = []
    producers = g.producers
    # the index never records a producer of "" (an omitted optional output); another
    # builder of a GraphRef might, and an empty name is never an edge
    empty = "" in producers
    for n in nodes:
        path = n.path
        names: Sequence[str] = n.input_names
        if captured and n.subgraphs:
            names = [*names, *(x for sub in n.subgraphs.values() for x in sorted(sub.captured))]
        mine = preds[path]
        for name in names:
            p = producers.get(name)
            if p is None or (empty and not name):
                continue
            pp = p.path
            if pp == path:
                continue
            theirs = succs.get(pp)
            if theirs is None:  # produced outside ``nodes``
                continue
            mine.append(pp)
            theirs.append(path)
    return preds, succs


def topological_order(g: GraphRef, nodes: Sequence[NodeRef]) -> list[NodeRef]:
    """ORT's GraphViewer order: a reverse DFS from the leaf nodes, the highest-index input first.

    The order matters: OpenVINO cuts clusters along it, and the QDQ-aware
    grouping takes its root nodes in it. Walked on positions, not paths: it runs per
    graph in the dataflow, the level graphs and the report, on every node.

    The answer is kept on ``g`` for the same nodes: the dataflow and the exported level
    graph ask for it on the same graphs of the lint's own index (their node lists differ
    only where a graph holds Constant nodes), and a graph does not change once indexed.
    """
    memo = g.order_memo
    if memo is not None and len(memo[0]) == len(nodes) and all(map(is_, memo[0], nodes)):
        return list(memo[1])
    out = _topological_order(g, nodes)
    g.order_memo = (tuple(nodes), tuple(out))
    return out


def _topological_order(g: GraphRef, nodes: Sequence[NodeRef]) -> list[NodeRef]:
    preds, succs = node_edges(g, nodes)
    return [nodes[i] for i in reverse_dfs_order([n.path for n in nodes], preds, succs)]

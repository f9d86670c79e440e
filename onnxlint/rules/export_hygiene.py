"""Export-hygiene rules (OL8xx): computations the exporter left for run time that it could
have folded into constants.

A chain of nodes whose every output is known at export time (``Shape -> Gather ->
Unsqueeze -> Concat`` over static dims, ``Constant -> Cast``) is reported once,
at its first node, with the number of foldable nodes. Quantize/Dequantize nodes
are never counted: QDQ models keep them on constant weights on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from onnxlint.analyses.dataflow import Constness, Dataflow
from onnxlint.analyses.shapes import Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Severity
from onnxlint.index import GraphRef, NodeRef
from onnxlint.rule import Rule, register

#: never folded: QDQ keeps DequantizeLinear on constant weights on purpose
_KEEP_OPS = frozenset(
    {
        "Constant",
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "If",
        "Loop",
        "Scan",
    }
)
#: a folded value bigger than this would bloat the file more than it saves
MAX_FOLDED_ELEMENTS = 1 << 20
#: ops that expand a small input into a large output: folding them trades run time for file
#: size, so they only count while their output stays small
_GENERATORS = frozenset({"ConstantOfShape", "Expand", "Tile", "Range", "EyeLike", "Resize"})
MAX_GENERATED_ELEMENTS = 1024

_FOLD_FIX = Fix(
    title="fold them before deployment: onnxscript.optimizer.optimize(model), or save ONNX "
    "Runtime's basic-level optimized model (SessionOptions.graph_optimization_level = "
    "ORT_ENABLE_BASIC, optimized_model_filepath = 'folded.onnx')",
    command="python -c \"import onnx, onnxscript; m = onnx.load('in.onnx'); "
    "onnx.save(onnxscript.optimizer.optimize(m), 'out.onnx')\"",
)


@dataclass
class FoldableChain:
    """Connected foldable nodes of one graph, in graph order."""

    graph: GraphRef
    nodes: list[NodeRef]
    results: list[str]  # values the rest of the graph reads from the chain
    from_shapes: bool  # reads a runtime tensor's (static) shape

    @property
    def ops(self) -> str:
        """``Shape -> Gather (x2) -> Concat``: op types in order of appearance, counted."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op_type] = counts.get(n.op_type, 0) + 1
        return " -> ".join(f"{op} (x{k})" if k > 1 else op for op, k in counts.items())


def foldable_chains(ctx: LintContext) -> list[FoldableChain]:
    """Every chain of the model (computed once, shared by OL801 and OL802)."""
    return ctx.analysis(_chains)


def _chains(ctx: LintContext) -> list[FoldableChain]:
    df = ctx.analysis(Dataflow)
    shapes = ctx.analysis(Shapes)
    out: list[FoldableChain] = []
    for g in ctx.index.graphs:
        out += list(_graph_chains(g, df, shapes))
    return out


def _is_foldable(node: NodeRef, df: Dataflow, shapes: Shapes) -> bool:
    if node.domain != "ai.onnx" or node.op_type in _KEEP_OPS or node.subgraphs:
        return False
    outs = [o for o in node.output_names if o]
    if not outs or not node.input_names:
        return False
    if node.graph.parent is not None and any(
        i in node.graph.input_set for i in node.input_names if i
    ):
        return False  # a body's inputs change per iteration, whatever dataflow proves about them
    limit = MAX_GENERATED_ELEMENTS if node.op_type in _GENERATORS else MAX_FOLDED_ELEMENTS
    for o in outs:
        if not df.foldable(o, node.graph):
            return False
        vt = shapes.value_type(o)
        if vt is None or not vt.is_static:
            if node.op_type in _GENERATORS:
                return False  # an output of unknown size may be huge
            continue
        size = 1
        for d in vt.shape or ():
            size *= int(d)  # type: ignore[arg-type]
        if size > limit:
            return False
    return True


def _graph_chains(g: GraphRef, df: Dataflow, shapes: Shapes) -> Iterator[FoldableChain]:
    foldable = [n for n in g.nodes if _is_foldable(n, df, shapes)]
    if not foldable:
        return
    member = {id(n) for n in foldable}
    parent = {id(n): id(n) for n in foldable}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n in foldable:
        for name in n.inputs:
            p = g.producers.get(name) if name else None
            if p is not None and id(p) in member:
                parent[find(id(n))] = find(id(p))
    groups: dict[int, list[NodeRef]] = {}
    for n in foldable:  # graph order is kept inside each group
        groups.setdefault(find(id(n)), []).append(n)
    for nodes in sorted(groups.values(), key=lambda ns: ns[0].index):
        inside = {id(n) for n in nodes}
        results = []
        from_shapes = False
        for n in nodes:
            if n.op_type in ("Shape", "Size") and df.kind(n.inputs[0], g) is not Constness.CONSTANT:
                from_shapes = True
            for name in n.inputs:
                p = g.producers.get(name) if name else None
                if (p is None or id(p) not in inside) and df.kind(
                    name, g
                ) is Constness.SHAPE_DERIVED:
                    from_shapes = True
            for o in n.outputs:
                readers = g.consumers.get(o, [])
                if o in g.output_set or any(id(r) not in inside for r in readers):
                    results.append(o)
        if results:  # a chain nobody reads is dead code (OL107), not a folding opportunity
            yield FoldableChain(g, nodes, results, from_shapes)


def _results(chain: FoldableChain) -> str:
    return _names(chain.results)


def _names(results: Sequence[str]) -> str:
    names = [repr(r) for r in results[:3]]
    more = f" and {len(results) - 3} more" if len(results) > 3 else ""
    return ", ".join(names) + more if names else "values"


#: the one-node chains an ``alike`` finding links to besides its own (the rest are counted)
ALIKE_RELATED = 50


@register
class FoldableShapeComputation(Rule):
    """Shape arithmetic over static dims left as runtime ops.

    What it does:
        Finds chains of nodes that compute a value from tensor *shapes* that are static
        (``Shape -> Gather -> Unsqueeze -> Concat`` feeding a ``Reshape``), so the value is
        known at export time. Each chain is reported once, at its first node, with its
        node count. Dims are tracked element by element: ``Gather(Shape(x), 2)`` is
        foldable when dim 2 is static even if dim 0 is ``batch``.

    Why it matters:
        Shape nodes are CPU work in every EP: accelerators either refuse them or split the
        graph around them, adding partitions and copies. Folded, the size becomes an
        initializer and ``Reshape`` targets become static, which NPU EPs need.

    Fix:
        Fold before deployment with ``onnxscript.optimizer.optimize(model)`` or save ONNX
        Runtime's basic-level optimized model. If the chain reads dynamic dims elsewhere,
        ``onnxlint fix-shapes`` first makes them static and folds the size inputs.

    Execution providers:
        All; it matters most for NPU EPs (QNN, NNAPI, CoreML) and for partition counts.
    """

    code = "OL801"
    model_reads = (Dataflow, Shapes)  # through foldable_chains
    name = "foldable-shape-computation"
    category = Category.EXPORT_HYGIENE
    severity = Severity.WARNING
    messages = {
        "default": "a chain of {count} {nodes} ({ops}) computes {results} from static shapes "
        "at run time; the value is known at export time, fold it into a constant",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,4] x) => (float[6,4] y) {
    s = Shape(x)
    i = Constant<value = int64[1] {2}>()
    d = Gather<axis=0>(s, i)
    m = Constant<value = int64[1] {-1}>()
    shp = Concat<axis=0>(m, d)
    y = Reshape(x, shp)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,4] x) => (float[6,4] y) <int64[2] shp = {6, 4}> {
    y = Reshape(x, shp)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        for chain in foldable_chains(ctx):
            if chain.from_shapes:
                _emit(self, ctx, chain)


@register
class FoldableConstantComputation(Rule):
    """Computation on constants alone left as runtime ops (``Constant -> Cast`` and the like).

    What it does:
        Finds chains of nodes whose inputs are all initializers or ``Constant`` nodes
        (``Constant -> Cast``, ``Transpose`` of a weight, ``Mul`` of two constants), reported
        once per chain at its first node with the number of foldable nodes; one-node chains
        of one op in one graph (the ``Identity`` copies of shared weights a TorchScript
        export writes, dozens in a transformer) are one finding, at the first of them. Quantize and
        Dequantize nodes are not counted: QDQ models keep them on purpose; nor are chains made
        only of fill ops (``ConstantOfShape`` of a constant), a compact form of a large value.

    Why it matters:
        The work is redone at every session creation, the file carries both forms, and an
        EP that claims a partition depending only on constants may fail: QNN refuses to
        build a partition with "zero graph inputs" when ORT's optimizations are disabled.

    Fix:
        Fold before deployment: ``onnxscript.optimizer.optimize(model)``, or save ONNX
        Runtime's basic-level optimized model (``optimized_model_filepath``).

    Execution providers:
        All; QNN fails on constant-only partitions.
    """

    code = "OL802"
    model_reads = (Dataflow, Shapes)  # through foldable_chains
    name = "foldable-constant-computation"
    category = Category.EXPORT_HYGIENE
    # ORT folds these itself at session creation (default optimizations): worth knowing,
    # rarely worth failing a build over, and exporters leave many of them
    severity = Severity.INFO
    messages = {
        "default": "a chain of {count} {nodes} ({ops}) computes {results} from constants "
        "only; fold it into an initializer",
        "alike": "{count} {op} nodes each compute one value from constants only ({results}); "
        "fold them into initializers",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    c = Constant<value = int64[4] {1, 2, 3, 4}>()
    f = Cast<to = 1>(c)
    y = Add(x, f)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) <float[4] f = {1.0, 2.0, 3.0, 4.0}> {
    y = Add(x, f)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        # one-node chains of one op in one graph (TorchScript's Identity copies of shared
        # weights: dozens in a transformer export) are one finding, at the first of them
        alike: dict[tuple[str, str], list[FoldableChain]] = {}
        for chain in foldable_chains(ctx):
            # ConstantOfShape(constant) alone is a compact fill, kept small on purpose
            if chain.from_shapes or all(n.op_type in _GENERATORS for n in chain.nodes):
                continue
            if len(chain.nodes) == 1:
                first = chain.nodes[0]
                alike.setdefault((chain.graph.path, first.op_type), []).append(chain)
            else:
                _emit(self, ctx, chain)
        for (_, op), chains in alike.items():
            if len(chains) == 1:
                _emit(self, ctx, chains[0])
                continue
            results = [r for c in chains for r in c.results]
            ctx.emit(
                self.make(
                    chains[0].nodes[0].location(),
                    "alike",
                    count=len(chains),
                    op=op,
                    results=_names(results),
                    related=tuple(c.nodes[0].location() for c in chains[1:ALIKE_RELATED]),
                    fix=_FOLD_FIX,
                )
            )


def _emit(rule: Rule, ctx: LintContext, chain: FoldableChain) -> None:
    first = chain.nodes[0]
    count = len(chain.nodes)
    ctx.emit(
        rule.make(
            first.location(),
            count=count,
            nodes="node" if count == 1 else "nodes",
            ops=chain.ops,
            results=_results(chain),
            related=tuple(n.location() for n in chain.nodes[1:10]),
            fix=_FOLD_FIX,
        )
    )

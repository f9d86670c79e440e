"""The root cause of an EP's refusal of a node, as data (:class:`~onnxlint.diagnostics.Cause`).

The refusal rules (:mod:`onnxlint.rules.ep_support`) give each finding the cause it shares
with others, so that the report names it once, where it starts: the graph inputs' dims a
dynamic shape traces to, the node where a shape is lost, the node that sets a shape ORT
folds only with its optimizations on, or the op, revision, dtype or condition itself.
"""

from __future__ import annotations

from collections.abc import Callable

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.capability import NodeFacts, Verdict
from onnxlint.analyses.dataflow import DATA_DEPENDENT_SHAPE_OPS, SIZE_INPUTS, Dataflow
from onnxlint.analyses.level_assignment import NodeAssignment
from onnxlint.analyses.shapes import Dim, Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import GENERATED_DIM, Cause
from onnxlint.index import NodeRef, input_dim_params
from onnxlint.rules.shapes import ShapeLoss, origin_walk


class InputDims:
    """``ctx.analysis(InputDims).names``: the named dims the main graph's inputs declare."""

    model_only = True  # the model and configuration alone: see context.SharedModel

    def __init__(self, ctx: LintContext) -> None:
        self.names = set(input_dim_params(ctx.model))


def _traced_dims(ctx: LintContext, na: NodeAssignment) -> set[str]:
    """Named dims of the node's values as ONNX's data-propagating inference sees them.

    The verdicts use ORT's own, narrower propagation (a shape computed by Shape ->
    Gather -> Concat stays unknown with optimizations disabled); when the values it
    computes are expressed in a graph input's named dims, those dims are the root cause:
    pinning them makes the shapes static once ORT folds the shape computations.
    """
    shapes = ctx.analysis(Shapes)
    named: set[str] = set()
    for name in (*na.node.inputs, *na.node.outputs):
        for d in (shapes.shape(name) if name else None) or ():
            if isinstance(d, str) and not GENERATED_DIM.match(d):
                named.add(d)
    return named


def _lost_at(ctx: LintContext, na: NodeAssignment) -> Cause | None:
    """The node where the unknown shape of one of the node's inputs starts, as a cause."""
    loss = ctx.analysis(ShapeLoss)
    for name in na.node.inputs:
        origin = loss.origin(na.node.graph.path, name) if name else None
        if origin is not None:
            return Cause("unknown-shape", (origin.label,), (origin.location(),))
    return None


def node_cause(ctx: LintContext, na: NodeAssignment, v: Verdict) -> Cause:
    """:func:`_cause` of a node's refusal, with the lint's analyses to trace it by."""
    return _cause(
        na.facts,
        v,
        lambda: _traced_dims(ctx, na),
        lambda: _lost_at(ctx, na),
        lambda: ctx.analysis(InputDims).names,
        lambda: _folded_at(ctx, na),
    )


class SessionShapeLoss:
    """Where each value's shape stops being static in the graph ORT hands the EPs with
    optimizations disabled: ``ctx.analysis(SessionShapeLoss).origin(graph, value)``
    (a dim with no value and no name the exporter gave).

    ORT infers fewer shapes than ONNX's data propagation and onnxlint's own analyses: a
    shape computed by a chain of constants (``ConstantOfShape -> Mul -> Where -> Expand``
    in the TorchScript exports of ViT's class token) is a runtime value to it until its
    constant folding, which runs at the basic level and above. The origin is the first
    node whose output has a lost dim while no input has one; the nodes after it inherit
    it. Computed once per lint, when a refusal asks."""

    def __init__(self, ctx: LintContext) -> None:
        la = ctx.analysis(Assignment).exported
        lg = la.graph
        graphs = {g.path: g for g in lg.graphs()}

        def lost(path: str, value: str) -> bool:
            return not _known(lg.value_type(graphs[path], value).shape)

        self._origin = origin_walk(
            ((g.path, lg.order(g)) for g in graphs.values()), lost, lambda _n, lost_in: not lost_in
        )

    def origin(self, graph: str, value: str) -> NodeRef | None:
        return self._origin.get((graph, value))


def _known(shape: tuple[Dim, ...] | None) -> bool:
    """Every dim a value or a name the exporter gave (a named dim is not lost: pinning it
    is the remedy, a ``dynamic-dims`` cause); an unknown or invented dim is lost."""
    return shape is not None and all(
        (isinstance(d, int) and d >= 0) or (isinstance(d, str) and not GENERATED_DIM.match(d))
        for d in shape
    )


def _folded_at(ctx: LintContext, na: NodeAssignment) -> Cause | None:
    """A ``folded-shape`` cause: the node's shape is lost, in ORT's graph before its
    optimizations, at a node whose size inputs (``Reshape``'s shape, ``Expand``'s...) are
    all known at export time (constants, or values computed from static shapes), which
    ORT's constant folding makes static at the basic level and above. None when the loss
    starts elsewhere or at a runtime value."""
    node = na.node
    g = node.graph
    loss = ctx.analysis(SessionShapeLoss)
    origin = next(
        (
            o
            for name in (*node.outputs, *node.inputs)
            if name and (o := loss.origin(g.path, name)) is not None
        ),
        None,
    )
    if origin is None:
        return None
    slots = SIZE_INPUTS.get(origin.op_type, ()) if origin.domain == "ai.onnx" else ()
    if not slots or origin.op_type in DATA_DEPENDENT_SHAPE_OPS:
        return None
    flow = ctx.analysis(Dataflow)
    names = origin.input_names
    sizes = [names[k] for k in slots if k < len(names) and names[k]]
    if not sizes or not all(flow.foldable(name, origin.graph) for name in sizes):
        return None
    return Cause("folded-shape", (origin.label,), (origin.location(),))


def _cause(
    facts: NodeFacts,
    v: Verdict,
    traced: Callable[[], set[str]] | None = None,
    lost_at: Callable[[], Cause | None] | None = None,
    input_dims: Callable[[], set[str]] | None = None,
    folded_at: Callable[[], Cause | None] | None = None,
) -> Cause:
    """The root cause of a refusal, as data (the grouping reports each cause once).

    A refusal for dynamic dims names the graph inputs' dims it comes from: dims named
    inside the graph (ORT's symbolic inference names them ``Addoutput_dim_0`` or writes
    them as expressions, ``floor(Pad_12_o0__d1/4)``) are replaced by the input dims they
    trace to, when they trace to any; a user can pin only those."""
    op = facts.qualified_op()
    if v.constraint == "static_shape":
        named: set[str] = set()
        generated = False
        for shape in (*facts.input_shapes, *facts.output_shapes):
            for d in shape or ():
                if isinstance(d, str) and not GENERATED_DIM.match(d):
                    named.add(d)
                elif not (isinstance(d, int) and d >= 0):
                    generated = True
        if not named and generated and traced is not None:
            named = traced()
        declared = input_dims() if input_dims is not None else set()
        if named - declared and declared:
            roots = named & declared
            if traced is not None:
                roots |= traced() & declared
            named = roots or named
        if named:
            return Cause("dynamic-dims", tuple(sorted(named)))
        if generated:
            folded = folded_at() if folded_at is not None else None
            return folded if folded is not None else Cause("data-dependent")
        lost = lost_at() if lost_at is not None else None
        if lost is not None:
            return lost
    if v.kind == "op":
        return Cause("op", (op,))
    if v.kind == "revision":
        return Cause("revision", (op, str(facts.since_version)))
    if v.kind == "domain":
        return Cause("domain", (facts.domain,))
    if v.kind == "dtype":
        return Cause("dtype", (op,))
    return Cause("constraint", (op, v.constraint or v.kind))

"""Control-flow rules (OL4xx): branches, loops and sizes decided by runtime values.

The loop rules (OL403, OL404) are :mod:`onnxlint.rules.loops`.

Accelerator EPs (QNN, NNAPI, CoreML, most NPUs) compile one static graph: an
``If`` whose condition or a ``Loop`` whose trip count depends on tensor values
cannot be compiled, and neither can an op whose output *size* depends on them
(``NonZero``, ``Reshape`` to a computed shape). Control flow that only looks
dynamic (its condition is computable from constants) is cheap to remove before
deployment, so it is a warning with the recipe.

Severity follows the selected EPs and means consequence (see
:func:`onnxlint.rules.shapes.ep_targets`): one diagnostic per EP whose profile needs
static control flow (or static shapes, for data-dependent sizes), an error when the
profile's ``refusal_consequence`` says the session fails for that cause and a warning
when the nodes fall back to the CPU; one EP-less warning when no EP is selected; one
info when the selected EPs all cope.
"""

from __future__ import annotations

from typing import Any

from onnxlint.analyses.dataflow import DATA_DEPENDENT_SHAPE_OPS, Constness, Dataflow, ValueFacts
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Severity
from onnxlint.index import GraphRef, NodeRef
from onnxlint.rule import Rule, register
from onnxlint.rules.shapes import data_dependent_size_inputs, ep_targets, model_fix

SEQUENCE_OPS = frozenset(
    {
        "SequenceConstruct",
        "SequenceEmpty",
        "SequenceAt",
        "SequenceInsert",
        "SequenceErase",
        "SequenceLength",
        "SequenceMap",
        "SplitToSequence",
        "ConcatFromSequence",
    }
)

_FOLD_FIX = Fix(
    title="fold it before deployment: onnxscript.optimizer.optimize(model) evaluates constant "
    "conditions and inlines the branch taken",
    command="python -c \"import onnx, onnxscript; m = onnx.load('in.onnx'); "
    "onnx.save(onnxscript.optimizer.optimize(m), 'out.onnx')\"",
)


def why_dynamic(ctx: LintContext, name: str, graph: GraphRef) -> str:
    """``graph input 'x' via main/ReduceSum_0 (ReduceSum)``: where a runtime value comes from."""
    df = ctx.analysis(Dataflow)
    f = df.facts(name, graph)
    src = f.source or "a runtime value"
    root = f"graph input '{src}'" if _is_graph_input(ctx, src) else src
    via = f" via {f.origin.path} ({f.origin.op_type})" if f.origin is not None else ""
    return f"{root}{via}"


def _is_graph_input(ctx: LintContext, name: str) -> bool:
    return name in ctx.index.main.inputs or any(
        name in fn.inputs for fn in ctx.index.functions.values()
    )


def dim_symbols(facts: ValueFacts) -> str:
    named = sorted(s for s in facts.symbols if s != "?")
    return ", ".join(repr(s) for s in named) if named else "unknown dims"


def cf_targets(ctx: LintContext, default: Severity = Severity.WARNING) -> list:
    return ep_targets(ctx, "requires_static_control_flow", "static control flow", default)


@register
class DataDependentIf(Rule):
    """An If whose condition is only known at run time.

    What it does:
        Follows the condition of every ``If`` (in any graph, including loop bodies and
        functions) back to its sources. Reports it when it depends on the values of graph
        inputs (``If(ReduceSum(x) > 0)``), or on dynamic dims of their shapes.

    Why it matters:
        EPs that compile a static graph cannot take ``If`` nodes: QNN refuses them, and the
        branches then run on the CPU with copies in and out. OpenVINO fails at compile time
        on branches whose outputs have dynamic rank.

    Fix:
        Compute both branches and select with ``Where``, or move the decision out of the
        model. When the condition depends only on dynamic dims, fixing those dims (the
        fix-shapes command) makes it a constant that an optimizer folds.

    Execution providers:
        For EPs that require static control flow (QNN, NNAPI, CoreML, ...): a warning when
        the profile says the refused nodes fall back to the CPU (QNN, measured), an error
        when it says the session fails; a warning when no EP is selected; info when the
        selected EPs handle control flow.
    """

    code = "OL401"
    name = "data-dependent-if"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    visits = ("If",)
    messages = {
        "default": "If condition '{cond}' depends on runtime values of {source}{why}",
        "shape": "If condition '{cond}' depends on the dynamic dims {dims}{why}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    s = ReduceSum<keepdims=0>(x)
    zero = Constant<value = float {0.0}>()
    c = Greater(s, zero)
    y = If(c) <then_branch = t () => (float[4] a) { a = Relu(x) }, else_branch = e () => (float[4] b) { b = Neg(x) }>
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    r = Relu(x)
    n = Neg(x)
    s = ReduceSum<keepdims=0>(x)
    zero = Constant<value = float {0.0}>()
    c = Greater(s, zero)
    y = Where(c, r, n)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx" or not node.inputs or not node.inputs[0]:
            return
        cond = node.inputs[0]
        df = ctx.analysis(Dataflow)
        f = df.facts(cond, node.graph)
        where = node.location(tensor=cond, slot="input 0")
        if f.kind is Constness.DATA_DEPENDENT:
            for t in cf_targets(ctx):
                ctx.emit(
                    self.make(
                        where,
                        "default",
                        severity=t.severity,
                        ep=t.ep,
                        cond=cond,
                        source=why_dynamic(ctx, cond, node.graph),
                        why=t.why,
                    )
                )
        elif f.kind is Constness.SHAPE_DERIVED and f.symbols:
            for t in cf_targets(ctx):
                ctx.emit(
                    self.make(
                        where,
                        "shape",
                        severity=t.severity,
                        ep=t.ep,
                        cond=cond,
                        dims=dim_symbols(f),
                        why=t.why,
                        fix=model_fix(ctx),
                    )
                )


@register
class FoldableIf(Rule):
    """An If whose condition is known before the model runs.

    What it does:
        Reports ``If`` nodes whose condition is computable from constants and static
        shapes alone (``If(Constant(true))``, ``If(Shape(x)[1] == 3)`` with a static dim).

    Why it matters:
        The branch not taken is dead weight, and EPs that need static control flow refuse
        the ``If`` although nothing about it is dynamic. Exporters leave these behind when
        they trace code paths guarded by Python conditions on shapes.

    Fix:
        Fold it before deployment: ``onnxscript.optimizer.optimize(model)`` evaluates the
        condition and inlines the branch taken.

    Execution providers:
        All; it blocks EPs that require static control flow until folded.
    """

    code = "OL402"
    name = "foldable-if"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    visits = ("If",)
    messages = {
        "default": "If condition '{cond}' is known before the model runs ({value}); fold the "
        "branch away before deployment",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    c = Constant<value = bool {1}>()
    y = If(c) <then_branch = t () => (float[4] a) { a = Relu(x) }, else_branch = e () => (float[4] b) { b = Neg(x) }>
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    y = Relu(x)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx" or not node.inputs or not node.inputs[0]:
            return
        cond = node.inputs[0]
        df = ctx.analysis(Dataflow)
        if not df.foldable(cond, node.graph):
            return
        f = df.facts(cond, node.graph)
        value = "constant" if f.kind is Constness.CONSTANT else "from static shapes"
        if f.value is not None and len(f.value) == 1:
            value = f"always {'true' if f.value[0] else 'false'}"
        ctx.emit(
            self.make(
                node.location(tensor=cond, slot="input 0"), cond=cond, value=value, fix=_FOLD_FIX
            )
        )


@register
class SequenceOp(Rule):
    """A sequence op (SequenceConstruct, SplitToSequence, ConcatFromSequence, ...).

    What it does:
        Reports nodes that build, read or modify ONNX sequences.

    Why it matters:
        Sequences are lists of tensors of varying shapes: accelerator EPs have no such
        type. QNN and the other NPU EPs refuse these nodes, and the ops around them fall
        back to the CPU too, since the tensors they exchange live in a sequence.

    Fix:
        Export with fixed-size tensor ops instead: ``Split``/``Concat`` with static sizes
        rather than ``SplitToSequence``/``ConcatFromSequence``, a stacked tensor rather than
        a Python list of tensors.

    Execution providers:
        For EPs that require static control flow or static shapes: an error when the
        profile says the session fails for either, a warning when the nodes fall back to
        the CPU; a warning when no EP is selected; info otherwise.
    """

    code = "OL405"
    name = "sequence-op"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    visits = tuple(sorted(SEQUENCE_OPS))
    messages = {
        "default": "{op} works on tensor sequences, which accelerator EPs do not support{why}"
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) {
    s = SplitToSequence<axis=0>(x)
    y = ConcatFromSequence<axis=0>(s)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) {
    a, b = Split<axis=0, num_outputs=2>(x)
    y = Concat<axis=0>(a, b)
}
""".replace('"" : 17', '"" : 18')

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx":
            return
        flags = ("requires_static_control_flow", "requires_static_shapes")
        for t in ep_targets(ctx, flags, "tensor types only", self.severity):
            ctx.emit(
                self.make(node.location(), severity=t.severity, ep=t.ep, why=t.why, op=node.op_type)
            )


@register
class DataDependentShape(Rule):
    """An op whose output shape depends on runtime tensor values.

    What it does:
        Reports the nodes where an output's *size* starts to depend on data:
        ``NonZero``/``Unique``/``NonMaxSuppression``/``Compress`` on runtime tensors, and
        ``Range``, ``ConstantOfShape``, ``Expand``, ``Reshape``, ``Tile``, ``Resize``, ``Pad``,
        ``Slice``, ``TopK`` (K), ``OneHot``, ``Split`` whose size inputs come from runtime
        values. Only the node where it starts is reported, not the nodes downstream.

    Why it matters:
        No shape fixing helps: the size is only known after the node ran. QNN refuses such
        nodes ("output shape must be static"), TensorRT needs data-dependent-shape plugins,
        and everything downstream inherits the unknown size.

    Fix:
        Use fixed-size formulations: a boolean mask with ``Where`` instead of ``NonZero``/
        ``Compress``, a static ``max_output_boxes`` with padding for NMS, size inputs
        computed from shapes (``Shape``) or constants rather than from tensor values.

    Execution providers:
        For EPs that require static shapes: an error when the profile says the session
        fails for dynamic shapes, a warning when the nodes fall back to the CPU; a warning
        when no EP is selected; info otherwise.
    """

    code = "OL410"
    node_reads = (Dataflow,)  # its origins are named by path and operator
    name = "data-dependent-shape"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    visits = ("*",)
    messages = {
        "content": "the output shape of this {op} depends on the values of '{value}' "
        "(known only at run time){why}",
        "size": "the output shape of this {op} depends on runtime values: its input {slot} "
        "'{value}' comes from {source}{why}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[8] x) => (int64[1,M] y) {
    y = NonZero(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[8] x) => (float[8] y) {
    zero = Constant<value = float {0.0}>()
    m = Greater(x, zero)
    y = Where(m, x, zero)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx":
            return
        df = ctx.analysis(Dataflow)
        if not any(df.shape_origin(o, node.graph) is node for o in node.output_names if o):
            return
        dd = data_dependent_size_inputs(ctx, node)
        if not dd:
            return  # a control-flow node (OL401/OL403 report it)
        targets = ep_targets(ctx, "requires_static_shapes", "static shapes", self.severity)
        slot, value = dd[0]
        where = node.location(tensor=value, slot=f"input {slot}")
        content_slot = 1 if node.op_type == "Compress" else 0
        args: dict[str, Any]
        if node.op_type in DATA_DEPENDENT_SHAPE_OPS and slot == content_slot:
            msg, args = "content", {"op": node.op_type, "value": value}
        else:
            source = why_dynamic(ctx, value, node.graph)
            msg, args = "size", {"op": node.op_type, "slot": slot, "value": value, "source": source}
        fix = Fix(title=_STATIC_SIZE_ADVICE.get(node.op_type, _STATIC_SIZE_DEFAULT))
        for t in targets:
            ctx.emit(
                self.make(where, msg, severity=t.severity, ep=t.ep, why=t.why, fix=fix, **args)
            )


_STATIC_SIZE_DEFAULT = (
    "compute the size from shapes (Shape) or constants rather than from tensor values, or "
    "give it a fixed upper bound and mask the unused part"
)
_STATIC_SIZE_ADVICE = {
    "NonZero": "keep the full tensor and mask it (Where with the condition) instead of "
    "gathering the non-zero positions",
    "Compress": "keep the full tensor and mask it (Where with the condition) instead of "
    "compressing it",
    "Unique": "use a fixed-size formulation (sort and mask duplicates) or move it out of the model",
    "NonMaxSuppression": "give NMS a constant max_output_boxes_per_class and pad its output to "
    "that size, or run NMS outside the model",
    "TopK": "make K a constant (an initializer) at export",
}

"""Control-flow rules (OL4xx): branches, loops and sizes decided by runtime values.

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
from onnxlint.analyses.shapes import Shapes
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
_UNROLL_FIX = Fix(
    title="unroll it at export: trace the Python loop with a fixed count (torch.onnx.export "
    "with dynamo=False traces loops; torch.jit.script keeps them as Loop)",
)


def _why_dynamic(ctx: LintContext, name: str, graph: GraphRef) -> str:
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


def _symbols(facts: ValueFacts) -> str:
    named = sorted(s for s in facts.symbols if s != "?")
    return ", ".join(repr(s) for s in named) if named else "unknown dims"


def _cf_targets(ctx: LintContext, default: Severity = Severity.WARNING) -> list:
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
            for t in _cf_targets(ctx):
                ctx.emit(
                    self.make(
                        where,
                        "default",
                        severity=t.severity,
                        ep=t.ep,
                        cond=cond,
                        source=_why_dynamic(ctx, cond, node.graph),
                        why=t.why,
                    )
                )
        elif f.kind is Constness.SHAPE_DERIVED and f.symbols:
            for t in _cf_targets(ctx):
                ctx.emit(
                    self.make(
                        where,
                        "shape",
                        severity=t.severity,
                        ep=t.ep,
                        cond=cond,
                        dims=_symbols(f),
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


def _loop_findings(
    ctx: LintContext, node: NodeRef
) -> tuple[str, dict[str, Any], ValueFacts] | None:
    """Why a Loop/Scan runs a runtime-decided number of iterations: (message id, args, facts)."""
    df = ctx.analysis(Dataflow)
    g = node.graph
    if node.op_type == "Loop":
        ins = node.inputs
        trip = ins[0] if len(ins) > 0 else ""
        cond = ins[1] if len(ins) > 1 else ""
        if trip and df.kind(trip, g) is Constness.DATA_DEPENDENT:
            return (
                "trip_count",
                {"value": trip, "source": _why_dynamic(ctx, trip, g)},
                df.facts(trip, g),
            )
        if cond and df.kind(cond, g) is Constness.DATA_DEPENDENT:
            return (
                "condition",
                {"value": cond, "source": _why_dynamic(ctx, cond, node.graph)},
                df.facts(cond, g),
            )
        body = node.subgraphs.get("body")
        if body is not None and body.outputs:
            cond_out = body.outputs[0]
            f = df.facts(cond_out, body)
            passthrough = len(body.inputs) > 1 and cond_out == body.inputs[1]
            if f.kind is Constness.DATA_DEPENDENT and not passthrough:
                return (
                    "body_condition",
                    {"value": cond_out, "source": _why_dynamic(ctx, cond_out, body)},
                    f,
                )
        if trip and df.kind(trip, g) is Constness.SHAPE_DERIVED and df.symbols(trip, g):
            f = df.facts(trip, g)
            return "shape", {"value": trip, "dims": _symbols(f)}, f
        return None
    # Scan: the iteration count is the length of the scanned axis
    shapes = ctx.analysis(Shapes)
    n_scan = 0
    attr = node.attr("num_scan_inputs")
    if attr is not None:
        n_scan = int(attr.i)
    body = node.subgraphs.get("body")
    n_state = max(0, (len(body.inputs) if body else 0) - n_scan)
    for name in node.inputs[n_state:]:
        if not name:
            continue
        if df.shape_dependent(name, g):
            origin = df.shape_origin(name, g)
            src = f"{origin.path} ({origin.op_type})" if origin is not None else "a runtime value"
            return "scan_length", {"value": name, "source": src}, df.facts(name, g)
        axis = _scan_axis(node, node.inputs[n_state:].index(name))
        vt = shapes.value_type(name)
        if vt is not None and vt.shape is not None and -len(vt.shape) <= axis < len(vt.shape):
            d = vt.shape[axis]
            if not isinstance(d, int):
                dims = repr(d) if isinstance(d, str) else "unknown dims"
                return "scan_shape", {"value": name, "dims": dims}, df.facts(name, g)
        elif vt is None or vt.shape is None:
            return "scan_shape", {"value": name, "dims": "unknown dims"}, df.facts(name, g)
    return None


def _scan_axis(node: NodeRef, k: int) -> int:
    attr = node.attr("scan_input_axes")
    if attr is not None and k < len(attr.ints):
        return int(attr.ints[k])
    return 0


def _static_iterations(ctx: LintContext, node: NodeRef) -> str | None:
    """The fixed iteration count of a Loop/Scan as text, or None when it is not fixed."""
    df = ctx.analysis(Dataflow)
    g = node.graph
    if node.op_type == "Loop":
        trip = node.inputs[0] if node.inputs else ""
        if not trip or not df.foldable(trip, g):
            return None
        value = df.value(trip, g)
        return (
            str(value[0])
            if value and len(value) == 1 and isinstance(value[0], int)
            else "a fixed number of"
        )
    shapes = ctx.analysis(Shapes)
    attr = node.attr("num_scan_inputs")
    n_scan = int(attr.i) if attr is not None else 0
    body = node.subgraphs.get("body")
    n_state = max(0, (len(body.inputs) if body else 0) - n_scan)
    scanned = [n for n in node.inputs[n_state:] if n]
    if not scanned:
        return None
    vt = shapes.value_type(scanned[0])
    axis = _scan_axis(node, 0)
    if vt is None or vt.shape is None or not -len(vt.shape) <= axis < len(vt.shape):
        return None
    d = vt.shape[axis]
    return str(d) if isinstance(d, int) else None


@register
class DataDependentLoop(Rule):
    """A Loop or Scan whose iteration count is only known at run time.

    What it does:
        Reports ``Loop`` nodes whose trip count or condition depends on runtime values
        (including while-loops whose body computes the condition from data), and ``Scan``
        nodes whose scanned axis has a runtime-dependent or dynamic length. When the count
        depends only on dynamic dims, the message names them.

    Why it matters:
        A runtime iteration count cannot be unrolled or compiled into a static graph: EPs
        that need static control flow refuse the node and run the body on the CPU, each
        iteration with its own copies. OpenVINO fails at compile time on TorchScript-style
        Loop bodies.

    Fix:
        Bound the loop statically (a fixed maximum with masking), or move the loop out of
        the model. When only dynamic dims decide it, the fix-shapes command makes it static.

    Execution providers:
        For EPs that require static control flow: an error when the profile says the
        session fails for it, a warning when the nodes fall back to the CPU; a warning
        when no EP is selected; info when the selected EPs handle control flow.
    """

    code = "OL403"
    name = "data-dependent-loop"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    visits = ("Loop", "Scan")
    messages = {
        "trip_count": "Loop trip count '{value}' depends on runtime values of {source}{why}",
        "condition": "Loop condition '{value}' depends on runtime values of {source}{why}",
        "body_condition": "Loop body computes its continue condition '{value}' from runtime "
        "values of {source} (a while-loop){why}",
        "shape": "Loop trip count '{value}' depends on the dynamic dims {dims}{why}",
        "scan_length": "Scan iterates over '{value}', whose length depends on runtime values "
        "(from {source}){why}",
        "scan_shape": "Scan iterates over '{value}' along a dynamic axis ({dims}){why}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[4] x) => (float[4] y) {
    t = Constant<value = bool {1}>()
    y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    y = Relu(x)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx" or "body" not in node.subgraphs:
            return
        found = _loop_findings(ctx, node)
        if found is None:
            return
        msg, args, _ = found
        slot = "input 0" if msg in ("trip_count", "shape") else None
        where = node.location(tensor=args["value"], slot=slot)
        fix = model_fix(ctx) if msg in ("shape", "scan_shape") else None
        for t in _cf_targets(ctx):
            ctx.emit(
                self.make(where, msg, severity=t.severity, ep=t.ep, why=t.why, fix=fix, **args)
            )


@register
class StaticLoop(Rule):
    """A Loop or Scan that runs a fixed number of times.

    What it does:
        Reports ``Loop`` nodes whose trip count is known before the model runs (and whose
        condition does not depend on data), and ``Scan`` nodes over a static axis.

    Why it matters:
        Nothing about it is dynamic, yet EPs that need static control flow refuse the node
        and run the body on the CPU. Unrolled, the same computation is a plain static graph.

    Fix:
        Unroll it at export: trace the Python loop with a fixed count (the default
        ``torch.onnx.export`` tracer unrolls loops; ``torch.jit.script`` keeps them), or
        rewrite recurrent layers as their ONNX ops (LSTM, GRU) where the EP supports them.

    Execution providers:
        For EPs that require static control flow: an error when the profile says the
        session fails for it, a warning when the nodes fall back to the CPU; a warning
        when no EP is selected; info when the selected EPs run loops (CPU, CUDA, TensorRT).
    """

    code = "OL404"
    name = "static-loop"
    category = Category.CONTROL_FLOW
    severity = Severity.WARNING
    fix_availability = "never"
    visits = ("Loop", "Scan")
    messages = {
        "default": "{op} runs {count} iterations, fixed before the model runs; unroll it{why}"
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    n = Constant<value = int64 {3}>()
    t = Constant<value = bool {1}>()
    y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    a = Relu(x)
    b = Relu(a)
    y = Relu(b)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != "ai.onnx" or "body" not in node.subgraphs:
            return
        if _loop_findings(ctx, node) is not None:
            return
        count = _static_iterations(ctx, node)
        if count is None:
            return
        targets = ep_targets(
            ctx, "requires_static_control_flow", "static control flow", self.severity
        )
        for t in targets:
            ctx.emit(
                self.make(
                    node.location(),
                    severity=t.severity,
                    ep=t.ep,
                    why=t.why,
                    op=node.op_type,
                    count=count,
                    fix=_UNROLL_FIX,
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
        if not any(df.shape_origin(o, node.graph) is node for o in node.outputs if o):
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
            source = _why_dynamic(ctx, value, node.graph)
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

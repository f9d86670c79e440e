"""Control-flow rules for loops (OL403, OL404): trip counts decided by runtime values, and
loops whose trip count is static and that could be unrolled.

Severity follows the selected EPs as for the other control-flow rules
(:mod:`onnxlint.rules.control_flow`).
"""

from __future__ import annotations

from typing import Any

from onnxlint.analyses.dataflow import Constness, Dataflow, ValueFacts
from onnxlint.analyses.shapes import Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Severity
from onnxlint.index import NodeRef
from onnxlint.rule import Rule, register
from onnxlint.rules.control_flow import cf_targets, dim_symbols, why_dynamic
from onnxlint.rules.shapes import ep_targets, model_fix

_UNROLL_FIX = Fix(
    title="unroll it at export: trace the Python loop with a fixed count (torch.onnx.export "
    "with dynamo=False traces loops; torch.jit.script keeps them as Loop)",
)


#: the end of both rules' bad examples: a Loop of ``n`` iterations over Relu
_RELU_LOOP = """\
    t = Constant<value = bool {1}>()
    y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}
"""


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
                {"value": trip, "source": why_dynamic(ctx, trip, g)},
                df.facts(trip, g),
            )
        if cond and df.kind(cond, g) is Constness.DATA_DEPENDENT:
            return (
                "condition",
                {"value": cond, "source": why_dynamic(ctx, cond, node.graph)},
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
                    {"value": cond_out, "source": why_dynamic(ctx, cond_out, body)},
                    f,
                )
        if trip and df.kind(trip, g) is Constness.SHAPE_DERIVED and df.symbols(trip, g):
            f = df.facts(trip, g)
            return "shape", {"value": trip, "dims": dim_symbols(f)}, f
        return None
    # Scan: the iteration count is the length of the scanned axis
    shapes = ctx.analysis(Shapes)
    scan_inputs = _scan_inputs(node)
    for name in scan_inputs:
        if not name:
            continue
        if df.shape_dependent(name, g):
            origin = df.shape_origin(name, g)
            src = f"{origin.path} ({origin.op_type})" if origin is not None else "a runtime value"
            return "scan_length", {"value": name, "source": src}, df.facts(name, g)
        axis = _scan_axis(node, scan_inputs.index(name))
        vt = shapes.value_type(name)
        if vt is not None and vt.shape is not None and -len(vt.shape) <= axis < len(vt.shape):
            d = vt.shape[axis]
            if not isinstance(d, int):
                dims = repr(d) if isinstance(d, str) else "unknown dims"
                return "scan_shape", {"value": name, "dims": dims}, df.facts(name, g)
        elif vt is None or vt.shape is None:
            return "scan_shape", {"value": name, "dims": "unknown dims"}, df.facts(name, g)
    return None


def _scan_inputs(node: NodeRef) -> list[str]:
    """A Scan's scanned inputs: those after its state variables (the body's inputs that
    are not among the last ``num_scan_inputs``)."""
    attr = node.attr("num_scan_inputs")
    n_scan = int(attr.i) if attr is not None else 0
    body = node.subgraphs.get("body")
    n_state = max(0, (len(body.inputs) if body else 0) - n_scan)
    return node.inputs[n_state:]


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
    scanned = [n for n in _scan_inputs(node) if n]
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
    example_bad = (
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[4] x) => (float[4] y) {
"""
        + _RELU_LOOP
    )
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
        for t in cf_targets(ctx):
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
    example_bad = (
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
    n = Constant<value = int64 {3}>()
"""
        + _RELU_LOOP
    )
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

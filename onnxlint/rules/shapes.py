"""Shape rules (OL3xx): which dims are dynamic or unknown, and where shapes get lost.

Severity follows the selected EPs and means consequence: for each EP whose profile
says ``requires_static_shapes`` the finding has ``ep`` set (one diagnostic per such
EP), and is an error only when that profile's ``refusal_consequence`` says the
session fails for dynamic shapes; when the EP hands the nodes to the CPU and the
model still runs (QNN, measured) it is a warning. With no EP selected the finding is
reported once, without an EP, at the rule's default severity; with EPs selected that
all accept dynamic shapes (CPU, CUDA, TensorRT...) it is reported once as info.

Every dynamic-shape diagnostic carries the exact ``onnxlint fix-shapes`` command
for the model (and the equivalent ONNX Runtime session option) as its fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from onnxlint.analyses.dataflow import SIZE_INPUTS, Constness, Dataflow
from onnxlint.analyses.shapes import Shapes, ValueType
from onnxlint.context import LintContext
from onnxlint.diagnostics import Applicability, Category, Cause, Fix, Location, Severity
from onnxlint.fixes.shapes import (
    DynamicInput,
    dynamic_dims,
    fix_command,
    ort_session_options,
    suggested_value,
)
from onnxlint.index import NodeRef, is_unknown_standard_op
from onnxlint.rule import Rule, register

__all__ = ["CAUSE_OF_FLAG", "Target", "dynamic_shape_fix", "ep_targets", "model_fix"]


@dataclass(frozen=True)
class Target:
    """One diagnostic to emit: its severity, the EP it is for (or None), and a clause naming it."""

    severity: Severity
    ep: str | None
    why: str  # "; QNNExecutionProvider (HTP) needs static shapes" or ""


#: the profile flag a finding is about -> the cause whose consequence the profile states
CAUSE_OF_FLAG = {
    "requires_static_shapes": "dynamic_shapes",
    "requires_static_control_flow": "control_flow",
}


def ep_targets(
    ctx: LintContext,
    flag: str | tuple[str, ...],
    need: str,
    default: Severity,
    relaxed: Severity = Severity.INFO,
) -> list[Target]:
    """Who cares about a finding: every selected EP whose profile sets ``flag`` (any of them,
    for a tuple) gets a diagnostic of its own; otherwise one EP-less diagnostic: ``default``
    without EPs, ``relaxed`` when none of the selected EPs cares.

    Severity means consequence: an EP's diagnostic is an error only when its profile says
    the session fails for that cause (``refusal_consequence``: ``session_fails``), and a
    warning when ORT hands the refused nodes to the CPU and the model still runs."""
    if not ctx.eps:
        return [Target(default, None, "")]
    flags = (flag,) if isinstance(flag, str) else flag
    out = []
    for p in ctx.eps:
        set_flags = [f for f in flags if getattr(p, f, False)]
        if not set_flags:
            continue
        fails = any(p.refusal_fails(CAUSE_OF_FLAG.get(f, f)) for f in set_flags)
        severity = Severity.ERROR if fails else Severity.WARNING
        out.append(Target(severity, p.id, f"; {p.label} needs {need}"))
    return out or [Target(relaxed, None, "")]


def _dynamic_inputs(ctx: LintContext) -> list[DynamicInput]:
    """Graph inputs still dynamic after the configured ``assume-dims`` are applied."""
    assume = ctx.config.assume_dims
    out = []
    for dyn in dynamic_dims(ctx.model):
        if dyn.shape is not None and assume:
            shape = tuple(assume.get(d, d) if isinstance(d, str) else d for d in dyn.shape)
            if all(isinstance(d, int) for d in shape):
                continue
            dyn = DynamicInput(dyn.name, shape)
        out.append(dyn)
    return out


def model_fix(ctx: LintContext) -> Fix | None:
    """The one fix-shapes command that makes every input of this model static (None if static)."""
    return ctx.analysis(_model_fix)


def _model_fix(ctx: LintContext) -> Fix | None:
    inputs = _dynamic_inputs(ctx)
    if not inputs:
        return None
    return dynamic_shape_fix(ctx, inputs)


def dynamic_shape_fix(ctx: LintContext, inputs: list[DynamicInput]) -> Fix:
    """A display-only fix: the fix-shapes command, with the ORT session option as the alternative."""
    assume = ctx.config.assume_dims
    named: dict[str, int | str] = {}
    for inp in inputs:
        for _, d in inp.named_dims:
            named.setdefault(d, suggested_value(d, assume))
    command = fix_command(ctx.loaded.path, inputs, assume)
    ort = ort_session_options(named) if named else ""
    # renderers show the title, so it carries the command itself
    title = f"run `{command}`"
    if named:
        pins = "; ".join(
            f"so.add_free_dimension_override_by_name({k!r}, {v})" for k, v in named.items()
        )
        title += f", or pin the dims when creating the ORT session: {pins}"
    args: dict[str, Any] = {
        "dims": {k: v for k, v in named.items()},
        "inputs": {i.name: list(i.shape) if i.shape is not None else None for i in inputs},
        "ort_session_options": ort,
    }
    return Fix(
        title=title,
        applicability=Applicability.UNSAFE,
        command=command,
        action="fix-shapes",
        args=args,
    )


def describe_dims(name: str, vt: ValueType) -> str:
    """``input_ids[0] = 'batch', input_ids[1] = ?`` for the non-static dims of ``vt``."""
    assert vt.shape is not None
    parts = []
    for i, d in enumerate(vt.shape):
        if isinstance(d, str):
            parts.append(f"{name}[{i}] = {d!r}")
        elif d is None:
            parts.append(f"{name}[{i}] = ?")
    return ", ".join(parts)


def _emit_per_target(
    ctx: LintContext, rule: type[Rule], where: Location, msg: str, targets: list[Target], **kw: Any
) -> None:
    for t in targets:
        ctx.emit(rule.make(where, msg, severity=t.severity, ep=t.ep, why=t.why, **kw))


@register
class ShapeInferenceError(Rule):
    """ONNX shape inference fails on this model.

    What it does:
        Runs ONNX shape inference once (strict mode, with data propagation) and reports
        its error. Linting goes on with what a lenient pass could infer.

    Why it matters:
        ONNX Runtime runs the same inference when it loads the model; EPs that plan memory
        ahead (QNN, NNAPI, CoreML, TensorRT) cannot place nodes whose shapes are unknown.
        The shape findings of onnxlint are incomplete after the failing node.

    Fix:
        Read the error: it names the operator. Usual causes are inconsistent declared
        shapes in ``value_info``/graph outputs (re-export, or clear them and re-infer with
        ``onnx.shape_inference.infer_shapes``) and custom ops without a shape function.

    Execution providers:
        All.
    """

    code = "OL300"
    name = "shape-inference-error"
    category = Category.SHAPES
    severity = Severity.WARNING
    messages = {
        "default": "ONNX shape inference failed: {error}",
        "propagation": "ONNX shape inference with data propagation failed; strict inference "
        "without it passes, but shapes computed from values may stay unknown: {error}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x, float[3,5] w) => (float[2,4] y) {
    y = Add(x, w)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x, float[2,4] w) => (float[2,4] y) {
    y = Add(x, w)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        shapes = ctx.analysis(Shapes)
        for error in shapes.errors[:1]:  # the lenient retry repeats it
            if shapes.propagation_only:
                # ONNX's propagation, not the model (optimum's merged decoders): a note
                ctx.emit(self.make(Location(), "propagation", severity=Severity.INFO, error=error))
            else:
                ctx.emit(self.make(Location(), error=error))


@register
class DynamicInputShape(Rule):
    """A graph input has symbolic or unknown dims.

    What it does:
        Lists, per graph input, every dim that is not a fixed integer, by position and
        name (``input_ids[1] = 'sequence'``; ``x[2] = ?`` when it has no name). Dims given
        a value in ``assume-dims`` count as static.

    Why it matters:
        QNN, NNAPI and other NPU EPs compile for one fixed shape. ONNX Runtime hands them
        nothing it cannot give a shape to, so a model with a symbolic batch dim can lose
        almost every node to the CPU, silently ("Cannot get shape" in QNN's verbose log).

    Fix:
        Fix the dims in the model with the ``onnxlint fix-shapes`` command the finding
        carries, or pin them when the session is created with
        ``SessionOptions.add_free_dimension_override_by_name(name, value)``.

    Execution providers:
        For EPs whose profile requires static shapes (QNN, NNAPI, Vitis AI): a warning
        when the profile says the refused nodes fall back to the CPU (QNN, measured: the
        session loads), an error when it says the session fails; info otherwise (CPU,
        CUDA, TensorRT, DirectML handle dynamic dims).
    """

    code = "OL301"
    name = "dynamic-input-shape"
    category = Category.SHAPES
    severity = Severity.INFO
    fix_availability = "always"
    messages = {"default": "graph input '{input}' has dynamic dims: {dims}{why}"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[batch,4] x) => (float[batch,4] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        fix = model_fix(ctx)
        targets = ep_targets(ctx, "requires_static_shapes", "static shapes", self.severity)
        for dyn in _dynamic_inputs(ctx):
            if dyn.shape is None:
                continue  # OL302
            dims = describe_dims(dyn.name, ValueType(None, dyn.shape))
            where = Location(graph=ctx.index.main.path, tensor=dyn.name, slot="graph input")
            for t in targets:
                d = type(self).make(
                    where, "default", severity=t.severity, ep=t.ep, why=t.why, input=dyn.name,
                    dims=dims, fix=fix,
                )  # fmt: skip
                named = tuple(sorted({n for _, n in dyn.named_dims}))
                if t.ep is not None and named:
                    # the dims are the root cause of the EP's shape refusals (onnxlint.causes)
                    d = replace(d, cause=Cause("dynamic-dims", named, (where,)))
                ctx.emit(d)


@register
class UnknownInputRank(Rule):
    """A graph input declares no shape at all (unknown rank).

    What it does:
        Reports graph inputs (initializers excluded) whose tensor type has no shape.

    Why it matters:
        Nothing downstream can be shape-inferred, so every EP that needs shapes refuses
        the whole graph, and ORT cannot pre-plan memory for it.

    Fix:
        Declare the shape at export (``input_names`` + ``dynamic_axes`` in
        ``torch.onnx.export``), or give it one with
        ``onnxlint fix-shapes model.onnx -o out.onnx --input name=1,3,224,224``.

    Execution providers:
        For EPs that require static shapes: an error when the profile says the session
        fails for dynamic shapes, a warning when the nodes fall back to the CPU; info
        otherwise.
    """

    code = "OL302"
    name = "unknown-input-rank"
    category = Category.SHAPES
    severity = Severity.INFO
    fix_availability = "always"
    messages = {"default": "graph input '{input}' has no shape (its rank is unknown){why}"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[] x) => (float[] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        fix = model_fix(ctx)
        targets = ep_targets(ctx, "requires_static_shapes", "static shapes", self.severity)
        for dyn in _dynamic_inputs(ctx):
            if dyn.shape is None:
                where = Location(graph=ctx.index.main.path, tensor=dyn.name, slot="graph input")
                _emit_per_target(
                    ctx, type(self), where, "default", targets, input=dyn.name, fix=fix
                )


class ShapeLoss:
    """Where each unknown shape of a model comes from: the node that lost it (an
    :func:`unknown_shape_origins` node or an operator unknown at the imported opset),
    followed forward through the nodes that inherit it. Computed once per model
    (``ctx.analysis(ShapeLoss)``); refusal rules name it as their findings' root cause."""

    model_only = True  # the model and configuration alone: see context.SharedModel

    def __init__(self, ctx: LintContext) -> None:
        shapes = ctx.analysis(Shapes)
        #: :func:`unknown_shape_origins`, found once for this analysis and OL302
        self.starts: list[tuple[NodeRef, list[str]]] = list(unknown_shape_origins(ctx))
        starts = {id(node) for node, _ in self.starts}
        functions = ctx.index.functions

        def lost(_graph: str, value: str) -> bool:
            return _unknown(shapes.value_type(value))

        def starts_here(node: NodeRef, _lost_in: bool) -> bool:
            return id(node) in starts or is_unknown_standard_op(node, functions)

        self._origin = origin_walk(((g.path, g.nodes) for g in ctx.index.graphs), lost, starts_here)

    def origin(self, graph: str, value: str) -> NodeRef | None:
        """The node where the shape of ``value`` (in graph ``graph``) was lost, if known."""
        return self._origin.get((graph, value))


def origin_walk(
    graphs: Iterable[tuple[str, Iterable[NodeRef]]],
    lost: Callable[[str, str], bool],
    starts_here: Callable[[NodeRef, bool], bool],
) -> dict[tuple[str, str], NodeRef]:
    """Where each lost shape starts, walking each graph's nodes in order: for every node
    with a lost output (``lost(graph, value)``), that node when ``starts_here(node,
    lost_in)`` (``lost_in``: whether any of its inputs is lost too), else the origin of its
    first input that has one. The origin is keyed by ``(graph, value)``. ONNX's view
    (:class:`ShapeLoss`) and ORT's session view
    (:class:`~onnxlint.rules.refusal_causes.SessionShapeLoss`) differ only in ``lost`` and
    ``starts_here``."""
    origin: dict[tuple[str, str], NodeRef] = {}
    for path, nodes in graphs:
        for node in nodes:
            outs = [o for o in node.outputs if o and lost(path, o)]
            if not outs:
                continue
            lost_in = any(lost(path, i) for i in node.inputs if i)
            found: NodeRef | None = None
            if starts_here(node, lost_in):
                found = node
            else:
                found = next(
                    (at for i in node.inputs if i and (at := origin.get((path, i))) is not None),
                    None,
                )
            if found is not None:
                for o in outs:
                    origin[(path, o)] = found
    return origin


def _unknown(vt: ValueType | None) -> bool:
    return vt is None or (vt.kind in ("tensor", "unknown") and vt.has_unknown)


def unknown_shape_origins(ctx: LintContext) -> Iterator[tuple[NodeRef, list[str]]]:
    """Nodes whose outputs have unknown dims/rank although every input's shape is known.

    Nodes whose output shape depends on runtime values (reported by OL410), control-flow
    nodes driven by runtime values (OL401/OL403) and operators that do not exist at the
    imported opset (OL204: the missing operator is the cause) are left to those rules.
    """
    shapes = ctx.analysis(Shapes)
    df = ctx.analysis(Dataflow)
    functions = ctx.index.functions
    value_type = shapes.value_type
    for node in ctx.index.nodes:
        g = node.graph
        if (
            g.function is not None
            or node.op_type == "Constant"
            or (node.schema is None and is_unknown_standard_op(node, functions))
        ):
            continue
        lost = []
        for out in node.output_names:
            if not out or not (out in g.consumers or out in g.output_set):
                continue  # an unused output (Dropout's mask) loses nothing
            if _unknown(value_type(out)):
                lost.append(out)
        if not lost:
            continue
        if any(df.shape_origin(o, g) is node for o in lost):
            continue
        known = True
        for inp in node.input_names:
            if not inp:
                continue
            if _unknown(value_type(inp)) or df.shape_dependent(inp):
                known = False
                break
        if known:
            yield node, lost


@register
class UnknownShapeOrigin(Rule):
    """Shape inference loses track of a shape at this node (reported where it starts).

    What it does:
        Finds the nodes whose output has an unknown rank or an unknown dim although all
        of their inputs have known (static or named) shapes. Only that first node is
        reported, not the nodes downstream that inherit the unknown shape.

    Why it matters:
        From here on, EPs that need shapes (QNN's "Cannot get shape") refuse the nodes,
        and ORT cannot plan their memory ahead. The cause is usually an op ONNX cannot
        infer (a custom or contrib op), or a size computed in a way inference cannot follow.

    Fix:
        Make the model's inputs static (the fix-shapes command below) and re-run inference;
        for custom ops, add ``value_info`` for their outputs, e.g. with
        ``python -m onnxruntime.tools.symbolic_shape_infer --input in.onnx --output out.onnx``.

    Execution providers:
        For EPs that require static shapes: an error when the profile says the session
        fails for dynamic shapes, a warning when the nodes fall back to the CPU; info
        otherwise.
    """

    code = "OL303"
    model_reads = (Shapes, Dataflow)  # and the graph inputs' dims (the fix)
    name = "unknown-shape-origin"
    category = Category.SHAPES
    severity = Severity.INFO
    visits = ()
    messages = {
        "default": "the shape of '{value}' is unknown ({shape}) although the inputs of this "
        "{op} node have known shapes; everything downstream inherits it{why}",
        "symbolic_unavailable": "shape origins are not reported: ONNX shape inference leaves "
        "{count} value(s) unknown and ORT's symbolic shape inference, which fills most of "
        "them, cannot run ({reason})",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[1,4] x) => (float[1,4] y) {
    t = custom.Mystery(x)
    y = Relu(t)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    t = Sigmoid(x)
    y = Relu(t)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        shapes = ctx.analysis(Shapes)
        targets = ep_targets(ctx, "requires_static_shapes", "static shapes", self.severity)
        fix = model_fix(ctx) or Fix(
            title="declare the output shape in value_info (ORT's symbolic_shape_infer can add it)",
            command="python -m onnxruntime.tools.symbolic_shape_infer --input in.onnx --output out.onnx",
        )
        origins = ctx.analysis(ShapeLoss).starts
        if origins and shapes.symbolic_unavailable:
            # without ORT's half of the inference, most of these would be false findings
            ctx.emit(
                self.make(
                    Location(),
                    "symbolic_unavailable",
                    count=len(origins),
                    reason=shapes.symbolic_unavailable,
                    fix=Fix(title="install sympy", command="pip install sympy"),
                )
            )
            return
        for node, lost in origins:
            vt = shapes.value_type(lost[0])
            shape = vt.describe() if vt is not None else "no type"
            _emit_per_target(
                ctx,
                type(self),
                node.location(tensor=lost[0], slot="output"),
                "default",
                targets,
                value=lost[0],
                shape=shape,
                op=node.op_type,
                fix=fix,
            )


def _size_inputs(node: NodeRef) -> tuple[int, ...]:
    return SIZE_INPUTS.get(node.op_type, ()) if node.domain == "ai.onnx" else ()


def data_dependent_size_inputs(ctx: LintContext, node: NodeRef) -> list[tuple[int, str]]:
    """(slot, value) of the inputs of ``node`` that set its output size from runtime values."""
    df = ctx.analysis(Dataflow)
    out = []
    for s in _size_inputs(node):
        if s < len(node.node.input) and node.node.input[s]:
            name = node.node.input[s]
            if df.kind(name, node.graph) is Constness.DATA_DEPENDENT:
                out.append((s, name))
    return out

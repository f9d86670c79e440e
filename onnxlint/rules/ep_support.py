"""EP-support rules (OL5xx): which nodes will an execution provider refuse, and why?

Each rule reads the shared assignment analysis (the verdict of every EP
profile for every node, computed once) and reports the nodes of the model as
exported. Severity follows the consequence: a node that falls back to CPU is
a warning, one that moves to another accelerator in the list is info, and
one that makes session creation fail is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.capability import Verdict
from onnxlint.analyses.dataflow import (
    Constness,
    Dataflow,
)
from onnxlint.analyses.level_assignment import NodeAssignment
from onnxlint.analyses.level_graph import source_location
from onnxlint.context import LintContext
from onnxlint.diagnostics import (
    Category,
    Cause,
    Diagnostic,
    Fix,
    Location,
    Severity,
)
from onnxlint.ep_names import CPU_EP, short_ep
from onnxlint.index import is_unknown_standard_op
from onnxlint.rule import Rule, register
from onnxlint.rules.refusal_causes import node_cause

_STATIC_KINDS = frozenset({"static_shape", "known_shape"})


def _fallback(na: NodeAssignment, ep: str) -> str:
    """Where the node goes when ``ep`` refuses it: the next EP in the list that claims it."""
    seen = False
    for v in na.verdicts:
        if v.ep == ep:
            seen = True
            continue
        if seen and na.claims(v.ep):
            return short_ep(v.ep)
    return "nowhere"


class _FoldedByOrt:
    """Whether ORT's level-1 constant folding (on by default) makes a refusal of the node
    at ``loc`` moot (:meth:`moot`); what depends on the node alone is read once for all
    the EPs that refuse it.

    True when every output of the node is computable from constants alone (the node is
    folded away before any EP is asked), or when the EP only wants an input to be a
    constant and that input is computed from constants (folding turns it into one).
    """

    def __init__(self, ctx: LintContext, loc: Location) -> None:
        graph = ctx.index.graph_by_path(loc.graph)
        self.graph = graph
        self.node = None
        if graph is not None and loc.node_index is not None and loc.node_index < len(graph.nodes):
            self.node = graph.nodes[loc.node_index]
            self.flow = ctx.analysis(Dataflow)
            self.outputs_constant = self._constant(self.node.output_names)

    def _constant(self, names: Sequence[str]) -> bool:
        names = [n for n in names if n]
        flow, graph = self.flow, self.graph
        return bool(names) and all(flow.kind(n, graph) is Constness.CONSTANT for n in names)

    def moot(self, verdict: Verdict) -> bool:
        node = self.node
        if node is None:
            return False
        if self.outputs_constant:
            return True
        if verdict.constraint != "constant_input" or verdict.slot is None:
            return False
        _, slot = verdict.slot
        inputs = node.input_names
        return slot < len(inputs) and self._constant([inputs[slot]])


def _fix_for(verdict: Verdict, op: str, ep: str) -> Fix:
    if verdict.kind == "revision" and verdict.supported_opsets:
        best = max(verdict.supported_opsets)
        return Fix(
            title=f"re-export at an opset where {ep} claims {op} (e.g. opset {best})",
            command=f"onnx.version_converter.convert_version(model, {best})",
        )
    if verdict.kind == "shape" and verdict.constraint in _STATIC_KINDS:
        return Fix(
            title="give the dynamic dimensions fixed values",
            command="onnxlint model.onnx --assume-dim NAME=VALUE  "
            "# or SessionOptions.add_free_dimension_override_by_name",
        )
    if verdict.kind == "dtype":
        return Fix(title=f"cast to a type {ep} accepts around {op}, or re-export in that type")
    if verdict.kind == "domain":
        return Fix(
            title=f"express {op} with standard ONNX operators, or register an {ep} custom-op library"
        )
    if verdict.kind == "op":
        return Fix(title=f"replace {op} with operators {ep} implements, or accept the fallback")
    return Fix(title=f"change the node so that it meets {ep}'s condition, or accept the fallback")


class _RefusalRule(Rule):
    """Shared logic of the per-kind refusal rules (not registered)."""

    #: verdict kinds this rule reports
    kinds: tuple[str, ...] = ()
    category = Category.EP_SUPPORT
    severity = Severity.WARNING
    visits = ()
    example_eps = ("qnn",)

    def check_model(self, ctx: LintContext) -> None:
        if not ctx.eps:
            return
        la = ctx.analysis(Assignment).exported
        for na in la:
            if na.node.graph.is_function:
                continue
            loc: Location | None = None
            folded: _FoldedByOrt | None = None
            # one cause per kind of refusal of this node: the EPs that refuse it alike
            # share it (a large model has one finding per node and EP)
            causes: dict[tuple[str, str | None], Cause] = {}
            for v in na.verdicts:
                if v.ep == na.first_claimer:
                    # ORT offers a node to the EPs in priority order until one takes it:
                    # the refusals of EPs after that one never happen
                    break
                if v.ep == CPU_EP or v.claimed or v.kind not in self.kinds:
                    continue
                if v.ep in na.in_body_refused_by:
                    continue  # the owning If/Loop is reported; ORT never asks about its body
                fallback = _fallback(na, v.ep)
                if fallback == "nowhere":
                    continue  # OL508 reports a node nothing runs
                severity = Severity.WARNING if fallback == "CPU" else Severity.INFO
                if loc is None or folded is None:
                    loc = source_location(la.graph, na.node, ctx.index)
                    folded = _FoldedByOrt(ctx, loc)
                key = (v.kind, v.constraint)
                cause = causes.get(key)
                if cause is None:
                    cause = causes[key] = node_cause(ctx, na, v)
                if folded.moot(v):
                    ctx.emit(self._diag(na, v, fallback, Severity.HINT, loc, cause, _FOLDED))
                else:
                    ctx.emit(self._diag(na, v, fallback, severity, loc, cause))

    def _diag(
        self,
        na: NodeAssignment,
        v: Verdict,
        fallback: str,
        severity: Severity,
        loc: Location,
        cause: Cause,
        note: str = "",
    ) -> Diagnostic:
        ep = short_ep(v.ep)
        op = na.facts.qualified_op()
        return self.make(
            loc,
            severity=severity,
            ep=v.ep,
            fix=_fix_for(v, op, ep),
            graph_level="exported",
            cause=cause,
            suffix=note,
            reason=v.reason,
            node=na.node.label,
            fallback=fallback,
            opsets=", ".join(str(o) for o in v.supported_opsets[-5:]) or "none",
        )


_FOLDED = (
    "; only with optimizations disabled: ORT folds this constant computation at its "
    "default level, so the EP never sees it"
)


@register
class EpOpUnsupported(_RefusalRule):
    """The execution provider has no implementation of this operator.

    What it does:
        Looks the node's (domain, op type) up in the EP's capability profile.

    Why it matters:
        ORT silently runs the node on the next EP in the list (usually CPU): a
        partition boundary, a transfer or partition switch, and lost speed.

    Fix:
        Replace the operator with ones the EP implements (many exporters have
        an option for it), or accept the fallback.

    Execution providers:
        Every EP with a profile; most often compiling NPU EPs (QNN, CoreML, NNAPI).
    """

    code = "OL501"
    name = "ep-op-unsupported"
    kinds = ("op",)
    messages = {"default": "{reason}; {node} falls back to {fallback}"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Erf(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""


@register
class EpOpRevisionUnsupported(_RefusalRule):
    """The execution provider implements this operator, but not the revision the model's opset selects.

    What it does:
        Resolves the operator revision at the imported opset and checks it
        against the EP's supported revisions; the message names the opsets at
        which the EP would claim the node.

    Why it matters:
        The node falls back to CPU although a re-export at another opset would
        keep it on the accelerator.

    Fix:
        Re-export (or convert) the model at one of the named opsets.

    Execution providers:
        EPs with revision ranges in their profile (CPU, CUDA, DML, QNN, OpenVINO...).
    """

    code = "OL502"
    name = "ep-op-revision-unsupported"
    kinds = ("revision",)
    messages = {"default": "{reason}; {node} falls back to {fallback}"}
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 6]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""


@register
class EpDtypeUnsupported(_RefusalRule):
    """The execution provider does not support an element type on one of the node's inputs or outputs.

    What it does:
        Compares the inferred element types with the EP's per-operator and
        EP-wide type lists.

    Why it matters:
        The node falls back; for NPUs a float64 or string tensor often pulls
        whole regions of a graph back to CPU.

    Fix:
        Cast to a supported type before the node (and back after), or export in that type.

    Execution providers:
        Most accelerators (QNN, OpenVINO, CoreML, NNAPI, TensorRT).
    """

    code = "OL503"
    name = "ep-dtype-unsupported"
    kinds = ("dtype",)
    messages = {"default": "{reason}; {node} falls back to {fallback}"}
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (double[1,16] x) => (double[1,16] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""


@register
class EpConstraintViolated(_RefusalRule):
    """The node breaks one of the execution provider's conditions (static shape, rank, attribute, constant input).

    What it does:
        Checks the declarative constraints of the EP's profile (with their
        reasons) against the node's shapes, attributes and inputs.

    Why it matters:
        The EP refuses the node and it falls back. A dynamic dimension is the
        most common cause on QNN: it can send a whole model to CPU silently.

    Fix:
        Meet the condition named in the message: fix dynamic dims
        (``--assume-dim``, ``add_free_dimension_override_by_name``), make an
        input an initializer, change the attribute.

    Execution providers:
        Every EP whose profile lists constraints; static-shape EPs (QNN, NNAPI, CoreML).
    """

    code = "OL504"
    name = "ep-constraint-violated"
    kinds = ("constraint", "shape")
    messages = {"default": "{reason}; {node} falls back to {fallback}"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16] x) => (float[N,16] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""


@register
class EpCustomDomain(_RefusalRule):
    """A custom-domain operator that the execution provider does not claim.

    What it does:
        Flags nodes whose domain the EP's profile does not list (contrib ops,
        custom ops from a vendor library).

    Why it matters:
        The node runs on CPU, or nowhere when no custom-op library is registered.

    Fix:
        Express the operator with standard ONNX operators, or register a
        custom-op library for the EP.

    Execution providers:
        All; most compiling EPs claim only ``ai.onnx`` (and a few ``com.microsoft`` ops).
    """

    code = "OL505"
    name = "ep-custom-domain"
    kinds = ("domain",)
    messages = {"default": "{reason}; {node} falls back to {fallback}"}
    example_eps = ("tensorrt",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[1,16] x) => (float[1,16] y) {
    y = com.microsoft.Gelu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""


@register
class EpClaimedButFails(Rule):
    """The execution provider claims this node, and session creation then fails because of it.

    What it does:
        Reports nodes that the first EP to claim them is known to accept
        during partitioning and then reject while compiling (e.g. OpenVINO
        and opset-23 ``Attention``), from the ``fails_after_claim``
        constraints of the EP's profile, and from its
        ``requantized_constant_failures``: QDQ arrangements around the node
        that the EP fails to compile (OpenVINO CPU: an 8-bit QDQ Add/Mul, or
        a Pad's 16-bit ``constant_value``, fed by a QuantizeLinear of a float
        constant, with optimizations disabled).

    Why it matters:
        There is no fallback: ``InferenceSession`` raises, often only on the
        device.

    Fix:
        Change the node as the message says (re-export at another opset,
        replace the operator) or put another EP first for this model.

    Execution providers:
        Compiling EPs that claim before they compile: OpenVINO, QNN, TensorRT.
    """

    code = "OL506"
    name = "ep-claimed-but-fails"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {"default": "{reason}; {node} makes session creation fail on {accel}"}
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 10, opset_import: ["" : 23]>
g (float[1,2,4,8] q, float[1,2,4,8] k, float[1,2,4,8] v) => (float[1,2,4,8] y) {
    y = Attention(q, k, v)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        if not ctx.eps:
            return
        la = ctx.analysis(Assignment).exported
        for na in la:
            # only the EP that gets the node matters: a later EP's failure never happens
            v = na.verdict_for(na.first_claimer)
            if v is None or not v.fails_after_claim:
                continue
            d = self.make(
                source_location(la.graph, na.node, ctx.index),
                ep=v.ep,
                fix=Fix(title="change the node as the reason says, or place another EP first"),
                reason=v.fails_after_claim,
                node=na.node.label,
                accel=short_ep(v.ep),
            )
            ctx.emit(replace(d, graph_level="exported"))


@register
class NodeRunsNowhere(Rule):
    """No execution provider in the list, CPU included, runs this node.

    What it does:
        Reports nodes that every EP profile in the list refuses, the CPU EP last.

    Why it matters:
        Session creation fails ("Could not find an implementation for ...").

    Fix:
        Re-export with operators and types ORT's CPU EP implements, or register
        the custom-op library that provides the operator.

    Execution providers:
        All (the CPU EP is the fallback of every list).
    """

    code = "OL508"
    name = "node-runs-nowhere"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {"default": "no execution provider in the list runs {op} ({node}): {reason}"}
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "my.vendor" : 1]>
g (float[1,16] x) => (float[1,16] y) {
    y = my.vendor.FancyOp(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    y = Relu(x)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        if not ctx.eps:
            return
        la = ctx.analysis(Assignment).exported
        for na in la:
            if na.node.graph.is_function or any(v.claimed for v in na.verdicts):
                continue
            cpu = na.verdict_for(CPU_EP)
            # an opset the runtime does not load at all, or an operator that does not exist
            # at the imported opset, is the opset rules' finding (OL201, OL204)
            if cpu is None or cpu.kind == "revision" or is_unknown_standard_op(na.node):
                continue
            d = self.make(
                source_location(la.graph, na.node, ctx.index),
                ep=CPU_EP,
                fix=Fix(
                    title="use operators ORT's CPU EP implements, or register a custom-op library"
                ),
                op=na.facts.qualified_op(),
                node=na.node.label,
                reason=cpu.reason,
            )
            ctx.emit(replace(d, graph_level="exported"))

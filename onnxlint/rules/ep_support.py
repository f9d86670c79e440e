"""EP-support rules (OL5xx): which nodes will an execution provider refuse, and why?

Each rule reads the shared assignment analysis (the verdict of every EP
profile for every node, computed once) and reports the nodes of the model as
exported. Severity follows the consequence: a node that falls back to CPU is
a warning, one that moves to another accelerator in the list is info, and
one that makes session creation fail is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from onnxlint.analyses.assignment import (
    CPU_EP,
    Assignment,
    LevelGraph,
    NodeAssignment,
    source_location,
)
from onnxlint.analyses.capability import NodeFacts, Verdict
from onnxlint.analyses.dataflow import Constness, Dataflow
from onnxlint.analyses.partition import Partitions
from onnxlint.analyses.partition_plan import Partition, PartitionPlan
from onnxlint.analyses.shapes import Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import GENERATED_DIM, Category, Cause, Diagnostic, Fix, Location, Severity
from onnxlint.ep_names import short_ep
from onnxlint.index import GraphRef, NodeRef, is_unknown_standard_op
from onnxlint.profiles import Partitioning
from onnxlint.rule import Rule, register
from onnxlint.rules.shapes import ShapeLoss

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


def _folded_by_ort(ctx: LintContext, loc: Location, verdict: Verdict) -> bool:
    """Whether ORT's level-1 constant folding (on by default) makes this refusal moot.

    True when every output of the node is computable from constants alone (the node is
    folded away before any EP is asked), or when the EP only wants an input to be a
    constant and that input is computed from constants (folding turns it into one).
    """
    graph = ctx.index.graph_by_path(loc.graph)
    if graph is None or loc.node_index is None or loc.node_index >= len(graph.nodes):
        return False
    node = graph.nodes[loc.node_index]
    flow = ctx.analysis(Dataflow)

    def constant(names: list[str]) -> bool:
        names = [n for n in names if n]
        return bool(names) and all(flow.kind(n, graph) is Constness.CONSTANT for n in names)

    if constant(node.outputs):
        return True
    if verdict.constraint != "constant_input" or verdict.slot is None:
        return False
    _, slot = verdict.slot
    return slot < len(node.inputs) and constant([node.inputs[slot]])


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
                if loc is None:
                    loc = source_location(la.graph, na.node, ctx.index)
                if _folded_by_ort(ctx, loc, v):
                    ctx.emit(self._diag(ctx, na, v, fallback, Severity.HINT, loc, _FOLDED))
                else:
                    ctx.emit(self._diag(ctx, na, v, fallback, severity, loc))

    def _diag(
        self,
        ctx: LintContext,
        na: NodeAssignment,
        v: Verdict,
        fallback: str,
        severity: Severity,
        loc: Location,
        note: str = "",
    ) -> Diagnostic:
        ep = short_ep(v.ep)
        op = na.facts.qualified_op()
        d = self.make(
            loc,
            severity=severity,
            ep=v.ep,
            fix=_fix_for(v, op, ep),
            reason=v.reason,
            node=na.node.label,
            fallback=fallback,
            opsets=", ".join(str(o) for o in v.supported_opsets[-5:]) or "none",
        )
        return replace(
            d,
            graph_level="exported",
            message=d.message + note,
            cause=_cause(na.facts, v, lambda: _traced_dims(ctx, na), lambda: _lost_at(ctx, na)),
        )


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


def _cause(
    facts: NodeFacts,
    v: Verdict,
    traced: Callable[[], set[str]] | None = None,
    lost_at: Callable[[], Cause | None] | None = None,
) -> Cause:
    """The root cause of a refusal, as data (the grouping reports each cause once)."""
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
        if named:
            return Cause("dynamic-dims", tuple(sorted(named)))
        if generated:
            return Cause("data-dependent")
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
class EpConstantOnlyPartition(Rule):
    """The execution provider claims a partition that depends only on constants, and then fails.

    What it does:
        Finds predicted partitions of EPs whose profile says such partitions
        fail (QNN: "zero graph inputs"), typically constant subgraphs that
        ORT folds only when optimizations are enabled.

    Why it matters:
        Session creation fails, usually only with optimizations disabled or
        when the constant chain is not foldable.

    Fix:
        Fold the constants (``onnxsim``, or ORT level-1 optimizations) or
        enable graph optimizations for the session.

    Execution providers:
        QNN.
    """

    code = "OL507"
    name = "ep-constant-only-partition"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "{reason}: partition {partition} ({nodes} node(s) from {first}) on the "
        "{level} graph",
    }
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    c = Constant <value = float[1,4] {1, 2, 3, 4}> ()
    r = Relu(c)
    e = Erf(r)
    y = Add(x, e)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    r = Relu(x)
    y = Add(x, r)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        if not ctx.eps:
            return
        parts = ctx.analysis(Partitions)
        plan = parts.plan("exported")
        if plan is None:
            return
        refs = {n.path: n for n in plan.graph.index.nodes} if plan.graph else {}
        for p in plan.partitions:
            if not p.fails:
                continue
            first = refs.get(p.first)
            loc = (
                source_location(plan.graph, first, ctx.index)
                if first is not None and plan.graph is not None
                else Location(graph=p.graph)
            )
            d = self.make(
                loc,
                ep=p.ep,
                fix=Fix(title="fold the constant subgraph, or enable ORT graph optimizations"),
                reason=p.fails,
                partition=p.id,
                nodes=p.size,
                first=first.label if first is not None else p.first,
                level="exported",
            )
            ctx.emit(replace(d, graph_level="exported"))


def _failing_plan(
    ctx: LintContext, fails: Callable[[Partitioning], bool]
) -> tuple[set[str], PartitionPlan, LevelGraph] | None:
    """The EPs whose partitioning facts say ``fails``, and the exported graph's plan."""
    failing = {p.ep for p in ctx.eps if fails(p.partitioning)}
    if not failing:
        return None
    plan = ctx.analysis(Partitions).plan("exported")
    if plan is None or plan.graph is None:
        return None
    return failing, plan, plan.graph


@register
class EpUnknownRankInput(Rule):
    """A partition of the execution provider receives a tensor of unknown rank, and fails to compile.

    What it does:
        Follows every tensor that enters a predicted partition of an EP whose profile says
        such inputs fail (``partitioning.unknown_rank_input_fails``: OpenVINO CPU), from a
        CPU node, another partition or a graph the partition does not contain, and reports
        the ones whose rank ONNX shape inference leaves unknown, and the ones another
        partition of the EP computes from an op revision the profile lists in
        ``partitioning.rank_losing_ops`` (OpenVINO CPU: GreaterOrEqual and LessOrEqual of
        opsets 12-15, whose outputs reach the next subgraph with no rank).

    Why it matters:
        The EP compiles each partition as a graph of its own, whose inputs need a rank:
        OpenVINO's CPU plug-in refuses a Parameter of dynamic rank, and its frontend fails
        on a Softmax of unknown rank. Session creation fails, with no fallback to CPU.

    Fix:
        Give the tensor a rank: declare it in ``value_info`` (ORT's
        ``symbolic_shape_infer`` adds most), fix the input dims, or enable ORT's graph
        optimizations, whose constant folding often resolves the shape computation. For a
        rank-losing op, re-export at an opset where the EP keeps the rank (16 or later).

    Execution providers:
        OpenVINO (CPU device), measured.
    """

    code = "OL509"
    status = "preview"
    since = "0.2.0"
    name = "ep-unknown-rank-input"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "'{tensor}' enters {accel} partition {partition} at {node} with unknown "
        "rank (from {source}); {accel} fails to compile a subgraph input of unknown rank "
        "(on the {level} graph)",
        "rank_lost": "'{tensor}' enters {accel} partition {partition} at {node} from "
        "{accel} partition {src_partition} with no rank: it is computed from {origin} "
        "({op}-{since_version}), whose outputs reach another {accel} subgraph as a "
        "Parameter of dynamic rank; {accel} fails to compile it (on the {level} graph)",
    }
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[1,4] x) => (float[1,4] y) {
    t = custom.Mystery(x)
    a = Relu(t)
    y = Sigmoid(a)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    a = Relu(x)
    y = Sigmoid(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        got = _failing_plan(ctx, lambda part: part.unknown_rank_input_fails)
        if got is None:
            return
        failing, plan, lg = got
        shapes = ctx.analysis(Shapes)
        parts = {p.id: p for p in plan.partitions}
        graphs = {g.path: g for g in lg.graphs()}
        lost = _rank_lost_tensors(ctx, plan, failing)
        for c in plan.crossings:
            dsts = [parts[i] for i in c.dst_partitions if parts[i].ep in failing]
            g = graphs.get(c.graph)
            if not dsts or g is None:
                continue
            origin = lost.get(c.tensor)
            if origin is not None and c.src_partition is not None:
                src = parts[c.src_partition]
                for dst in (d for d in dsts if d.ep == src.ep):
                    self._emit_lost(ctx, lg, g, c.tensor, src.id, dst, origin)
                continue
            # the level graph's types are plain ONNX inference, what ORT hands the EP
            if lg.value_type(g, c.tensor).shape is not None:
                continue
            declared = shapes.value_type(c.tensor)
            if declared is not None and declared.kind not in ("tensor", "unknown"):
                continue  # a sequence or map is another failure than a missing rank
            for dst in dsts:
                members = set(dst.nodes)
                consumer = next(
                    (n for n in g.consumers.get(c.tensor, []) if n.path in members), None
                )
                producer = g.producers.get(c.tensor)
                source = (
                    f"{producer.label} on {short_ep(c.src_ep) if c.src_ep else 'CPU'}"
                    if producer is not None
                    else "outside the graph"
                )
                loc = (
                    source_location(lg, consumer, ctx.index)
                    if consumer is not None
                    else Location(graph=c.graph, tensor=c.tensor)
                )
                d = self.make(
                    replace(loc, tensor=c.tensor, slot="input"),
                    ep=dst.ep,
                    fix=Fix(
                        title="give the tensor a known rank (value_info, ORT's "
                        "symbolic_shape_infer, static input dims), or enable ORT graph "
                        "optimizations"
                    ),
                    tensor=c.tensor,
                    accel=short_ep(dst.ep),
                    partition=dst.id,
                    node=consumer.label if consumer is not None else dst.first,
                    source=source,
                    level="exported",
                )
                ctx.emit(replace(d, graph_level="exported"))

    def _emit_lost(
        self,
        ctx: LintContext,
        lg: LevelGraph,
        g: GraphRef,
        tensor: str,
        src_partition: int,
        dst: Partition,
        origin: tuple[NodeRef, int],
    ) -> None:
        members = set(dst.nodes)
        consumer = next((n for n in g.consumers.get(tensor, []) if n.path in members), None)
        loc = (
            source_location(lg, consumer, ctx.index)
            if consumer is not None
            else Location(graph=g.path, tensor=tensor)
        )
        node, since = origin
        d = self.make(
            replace(loc, tensor=tensor, slot="input"),
            "rank_lost",
            ep=dst.ep,
            fix=Fix(
                title=f"re-export at opset 16 or later, or enable ORT graph optimizations "
                f"(constant folding often removes the {node.op_type})"
            ),
            tensor=tensor,
            accel=short_ep(dst.ep),
            partition=dst.id,
            node=consumer.label if consumer is not None else dst.first,
            src_partition=src_partition,
            origin=node.label,
            op=node.op_type,
            since_version=since,
            level="exported",
        )
        ctx.emit(replace(d, graph_level="exported"))


@register
class EpCyclicPartition(Rule):
    """A predicted partition of the execution provider is left and re-entered through other nodes.

    What it does:
        For EPs whose profile says such partitions fail (``partitioning.
        cyclic_partition_fails``: OpenVINO CPU), looks for a path from a node of a
        partition predicted on the exported graph, through nodes outside it, back into
        the partition.

    Why it matters:
        ORT fuses each partition of a compiling EP into one node. A partition that is not
        closed under the paths between its nodes makes the fused graph cyclic, and session
        creation fails with "the graph is not acyclic", with no fallback to CPU. OpenVINO's
        clustering produces such partitions when a single-node cluster joins the next
        cluster it is connected to.

    Fix:
        Let the EP claim the nodes on the path too (ops and element types it supports), or
        run the model without the EP. The check reads the graph as exported; with graph
        optimizations enabled the same partition usually forms on the level-1 graph too.

    Execution providers:
        OpenVINO (CPU device), measured.
    """

    code = "OL510"
    status = "preview"
    since = "0.2.0"
    name = "ep-cyclic-partition"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "a path from {accel} partition {partition} ({nodes} node(s)) runs "
        "outside it (through {exit}) and re-enters it at {entry}; ORT's fused graph is "
        "cyclic and session creation fails (on the {level} graph)",
    }
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    u = NonZero(a)
    b1 = Cast <to = 1> (u)
    b2 = ReduceSum <keepdims = 0> (b1)
    c = Add(a, b2)
    y = Relu(c)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    u = NonZero(a)
    b1 = Cast <to = 1> (u)
    b2 = ReduceSum <keepdims = 0> (b1)
    c = Add(x, b2)
    y = Relu(c)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        # the exported graph only: OpenVINO cuts along ORT's order, which follows node
        # indices; the level-1 graph's nodes created by ORT's fusions have indices its saved
        # file does not give (a fused DynamicQuantizeLinear's cut is predicted elsewhere)
        got = _failing_plan(ctx, lambda part: part.cyclic_partition_fails)
        if got is None:
            return
        failing, plan, lg = got
        graphs = {g.path: g for g in lg.graphs()}
        for p in plan.partitions:
            g = graphs.get(p.graph)
            if p.ep not in failing or g is None:
                continue
            found = _reentry(lg, g, p)
            if found is None:
                continue
            exit_, entry = found
            d = self.make(
                source_location(lg, entry, ctx.index),
                ep=p.ep,
                fix=Fix(title="let the EP claim the nodes on the path, or drop the EP"),
                accel=short_ep(p.ep),
                partition=p.id,
                nodes=p.size,
                exit=exit_.label,
                entry=entry.label,
                level="exported",
            )
            ctx.emit(replace(d, graph_level="exported"))


@register
class EpClaimedBodyPartition(Rule):
    """The execution provider claims a Loop and, separately, a partition inside its body.

    What it does:
        For the control-flow ops an EP's profile lists in ``partitioning.
        claimed_body_partition_fails`` (OpenVINO CPU: Loop), reports a node of that op in a
        predicted partition of the EP when the EP also has a partition inside one of the
        node's bodies.

    Why it matters:
        ORT partitions a body before the graph around it, so the body partition is fused
        first; the EP then compiles the Loop with a body that holds that fused node, which
        its frontend does not know. Session creation fails ("OpenVINO does not support the
        following ONNX operations: com.intel.ai.OpenVINO-EP-subgraph", or "node not found
        in graph cache"), at every optimization level.

    Fix:
        Unroll the loop at export (a fixed trip count), or run the model without the EP.

    Execution providers:
        OpenVINO (CPU device), measured.
    """

    code = "OL511"
    status = "preview"
    since = "0.2.0"
    name = "ep-claimed-body-partition"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "{accel} claims {op} {node} (partition {partition}) and also partition "
        "{inner} inside its body; it fails to compile a body holding another partition "
        "(on the {level} graph)",
    }
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 16]>
g (float[4] x) => (float[4] y) {
    m = Constant <value = int64 {3}> ()
    t = Constant <value = bool {1}> ()
    r = Relu(x)
    lo = Loop(m, t, r) <body = body (int64 i, bool c, float[4] acc) => (bool c_out, float[4] acc_out) {
        c_out = Identity(c)
        a1 = Relu(acc)
        acc_out = Sigmoid(a1)
    }>
    y = Relu(lo)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 16]>
g (float[4] x) => (float[4] y) {
    r = Relu(x)
    a1 = Relu(r)
    a2 = Sigmoid(a1)
    y = Relu(a2)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        ops = {p.ep: set(p.partitioning.claimed_body_partition_fails) for p in ctx.eps}
        got = _failing_plan(ctx, lambda part: bool(part.claimed_body_partition_fails))
        if got is None:
            return
        failing, plan, lg = got
        refs = {n.path: n for n in lg.index.nodes}
        for p in plan.partitions:
            if p.ep not in failing:
                continue
            for path in p.nodes:
                n = refs.get(path)
                if n is None or n.op_type not in ops[p.ep]:
                    continue
                inner = next(
                    (
                        q
                        for q in plan.partitions
                        if q.ep == p.ep and q.graph.startswith(f"{n.path}:")
                    ),
                    None,
                )
                if inner is None:
                    continue
                d = self.make(
                    source_location(lg, n, ctx.index),
                    ep=p.ep,
                    fix=Fix(title="unroll the loop at export, or run without the EP"),
                    accel=short_ep(p.ep),
                    op=n.op_type,
                    node=n.label,
                    partition=p.id,
                    inner=inner.id,
                    level="exported",
                )
                ctx.emit(replace(d, graph_level="exported"))


def _reentry(lg: LevelGraph, g: GraphRef, part: Partition) -> tuple[NodeRef, NodeRef] | None:
    """(node outside ``part`` on a path that leaves it, node of ``part`` it re-enters at).

    A path that leaves and re-enters stays within the partition's span of the topological
    order, so the search goes no further than the partition's last node.
    """
    order = lg.order(g)
    pos = {n.path: i for i, n in enumerate(order)}
    members = set(part.nodes)
    last = max((pos[m] for m in members if m in pos), default=-1)
    by_path = {n.path: n for n in order}
    stack = [
        c
        for m in part.nodes
        if m in by_path
        for o in by_path[m].outputs
        if o
        for c in g.consumers.get(o, [])
        if c.path not in members and pos.get(c.path, last + 1) < last
    ]
    seen: set[str] = set()
    while stack:
        x = stack.pop()
        if x.path in seen:
            continue
        seen.add(x.path)
        for o in x.outputs:
            for c in g.consumers.get(o, []) if o else []:
                if c.path in members:
                    return x, c
                if pos.get(c.path, last + 1) < last:
                    stack.append(c)
    return None


#: ops whose output has the rank of (the broadcast of) their inputs: a rank ORT cannot
#: give an input, it cannot give their output either
_RANK_FOLLOWS_INPUTS = frozenset(
    {
        "Abs", "Add", "And", "Cast", "Div", "Equal", "Greater", "GreaterOrEqual", "Identity",
        "Less", "LessOrEqual", "Mul", "Neg", "Not", "Or", "Relu", "Sigmoid", "Sub", "Tanh",
        "Where", "Xor",
    }
)  # fmt: skip


def _rank_lost_tensors(
    ctx: LintContext, plan: PartitionPlan, eps: set[str]
) -> dict[str, tuple[NodeRef, int]]:
    """Tensors of ``eps``' partitions computed from a rank-losing op of the EP's profile.

    Maps each to the node it comes from and that node's revision. The loss is followed
    through the producing partition only, along ops whose output rank follows their inputs.
    """
    losing = {
        p.ep: {(r.domain, r.op): r.since_version for r in p.partitioning.rank_losing_ops}
        for p in ctx.eps
        if p.ep in eps and p.partitioning.rank_losing_ops
    }
    if not losing or plan.graph is None:
        return {}
    la = ctx.analysis(Assignment).exported
    out: dict[str, tuple[NodeRef, int]] = {}
    for part in plan.partitions:
        revisions = losing.get(part.ep)
        if not revisions:
            continue
        members = set(part.nodes)
        for n in plan.graph.index.nodes:
            if n.path not in members:
                continue
            facts = na.facts if (na := la.get(n)) is not None else None
            if facts is None:
                continue
            since = revisions.get((facts.domain, facts.op_type))
            origin: tuple[NodeRef, int] | None
            if since is not None and facts.since_version == since:
                origin = (n, since)
            elif n.op_type in _RANK_FOLLOWS_INPUTS:
                origin = next((out[i] for i in n.inputs if i in out), None)
            else:
                origin = None
            if origin is not None:
                for o in n.outputs:
                    if o:
                        out[o] = origin
    return out


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

"""EP partition rules (OL507, OL509-OL511): predicted partitions an execution provider
then fails to compile.

Each rule reads the shared partition prediction and the partitioning facts of the EP's
profile: a partition that depends only on constants, one that receives a tensor of
unknown rank, one that ORT's fusion would make cyclic, and one built inside a control-flow
body the EP claimed whole. Session creation fails on each, with no fallback to CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.level_graph import LevelGraph, source_location
from onnxlint.analyses.partition import Partitions
from onnxlint.analyses.partition_plan import Partition, PartitionPlan
from onnxlint.analyses.shapes import Shapes
from onnxlint.analyses.static_types import value_type_of
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
from onnxlint.ep_names import short_ep
from onnxlint.index import GraphRef, NodeRef
from onnxlint.profiles.model import Partitioning
from onnxlint.rule import Rule, register


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
            _emit_exported(
                self,
                ctx,
                loc,
                "default",
                p.ep,
                "fold the constant subgraph, or enable ORT graph optimizations",
                reason=p.fails,
                partition=p.id,
                nodes=p.size,
                first=first.label if first is not None else p.first,
            )


@dataclass(frozen=True)
class _Claimed:
    """The exported graph's plan as seen by a rule about EPs with one partitioning flag."""

    #: the EPs whose partitioning facts set the flag
    eps: set[str]
    plan: PartitionPlan
    lg: LevelGraph
    #: the plan's partitions of those EPs, in the plan's order
    partitions: list[Partition]
    graphs: dict[str, GraphRef]


def _claimed_partitions(ctx: LintContext, fails: Callable[[Partitioning], bool]) -> _Claimed | None:
    """The claimed partitions of the EPs whose partitioning facts say ``fails``, on the
    exported graph; None when no EP sets the flag or there is no plan."""
    failing = {p.ep for p in ctx.eps if fails(p.partitioning)}
    if not failing:
        return None
    plan = ctx.analysis(Partitions).plan("exported")
    if plan is None or plan.graph is None:
        return None
    lg = plan.graph
    return _Claimed(
        eps=failing,
        plan=plan,
        lg=lg,
        partitions=[p for p in plan.partitions if p.ep in failing],
        graphs={g.path: g for g in lg.graphs()},
    )


def _emit_exported(
    rule: type[Rule] | Rule,
    ctx: LintContext,
    where: Location,
    message_id: str,
    ep: str,
    fix_title: str,
    **args: Any,
) -> None:
    """Emit ``rule``'s finding about the exported graph (its message names the level)."""
    d = rule.make(where, message_id, ep=ep, fix=Fix(title=fix_title), **args, level="exported")
    ctx.emit(replace(d, graph_level="exported"))


def _emit_at_node(
    rule: type[Rule] | Rule,
    ctx: LintContext,
    at: tuple[LevelGraph, NodeRef],
    ep: str,
    fix_title: str,
    **args: Any,
) -> None:
    """:func:`_emit_exported` at a node of the exported level graph, ``accel`` first."""
    where = source_location(at[0], at[1], ctx.index)
    _emit_exported(rule, ctx, where, "default", ep, fix_title, accel=short_ep(ep), **args)


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
        opsets 12-15, whose outputs reach the next subgraph with no rank, unless the model
        declares a rank in ``value_info`` for a tensor on the way).

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
        claimed = _claimed_partitions(ctx, lambda part: part.unknown_rank_input_fails)
        if claimed is None:
            return
        failing, plan, lg = claimed.eps, claimed.plan, claimed.lg
        shapes = ctx.analysis(Shapes)
        parts = {p.id: p for p in plan.partitions}
        lost = _rank_lost_tensors(ctx, plan, failing)
        for c in plan.crossings:
            dsts = [parts[i] for i in c.dst_partitions if parts[i].ep in failing]
            g = claimed.graphs.get(c.graph)
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
                _emit_exported(
                    self,
                    ctx,
                    replace(loc, tensor=c.tensor, slot="input"),
                    "default",
                    dst.ep,
                    "give the tensor a known rank (value_info, ORT's symbolic_shape_infer, "
                    "static input dims), or enable ORT graph optimizations",
                    tensor=c.tensor,
                    accel=short_ep(dst.ep),
                    partition=dst.id,
                    node=consumer.label if consumer is not None else dst.first,
                    source=source,
                )

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
        _emit_exported(
            self,
            ctx,
            replace(loc, tensor=tensor, slot="input"),
            "rank_lost",
            dst.ep,
            f"re-export at opset 16 or later, or enable ORT graph optimizations "
            f"(constant folding often removes the {node.op_type})",
            tensor=tensor,
            accel=short_ep(dst.ep),
            partition=dst.id,
            node=consumer.label if consumer is not None else dst.first,
            src_partition=src_partition,
            origin=node.label,
            op=node.op_type,
            since_version=since,
        )


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
        claimed = _claimed_partitions(ctx, lambda part: part.cyclic_partition_fails)
        if claimed is None:
            return
        lg = claimed.lg
        for p in claimed.partitions:
            g = claimed.graphs.get(p.graph)
            found = _reentry(lg, g, p) if g is not None else None
            if found is None:
                continue
            exit_, entry = found
            _emit_at_node(
                self,
                ctx,
                (lg, entry),
                p.ep,
                "let the EP claim the nodes on the path, or drop the EP",
                partition=p.id,
                nodes=p.size,
                exit=exit_.label,
                entry=entry.label,
            )


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
        claimed = _claimed_partitions(ctx, lambda part: bool(part.claimed_body_partition_fails))
        if claimed is None:
            return
        plan, lg = claimed.plan, claimed.lg
        refs = {n.path: n for n in lg.index.nodes}
        for p in claimed.partitions:
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
                _emit_at_node(
                    self,
                    ctx,
                    (lg, n),
                    p.ep,
                    "unroll the loop at export, or run without the EP"
                    if n.op_type != "If"
                    else "give the branches only nodes the EP takes (a reduction to a scalar "
                    "is one it refuses), or run without the EP",
                    op=n.op_type,
                    node=n.label,
                    partition=p.id,
                    inner=inner.id,
                )


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
    through the nodes of those partitions, in the graph's order, along ops whose output
    rank follows their inputs (also into a later partition that reads the tensor: its input
    has no rank there either).
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
    # each partition's nodes in graph order, in one walk (not one walk per partition)
    part_of = {path: part for part in plan.partitions if losing.get(part.ep) for path in part.nodes}
    for n in plan.graph.index.nodes:
        part = part_of.get(n.path)
        if part is None:
            continue
        revisions = losing[part.ep]
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
                if o and not _declares_rank(n.graph, o):
                    out[o] = origin
    return out


def _declares_rank(g: GraphRef, name: str) -> bool:
    """Whether the model declares a rank for ``name``: ORT then keeps it (measured)."""
    vi = g.value_info.get(name)
    return vi is not None and value_type_of(vi.type).shape is not None

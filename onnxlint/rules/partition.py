"""Partition rules (OL6xx): where will ONNX Runtime cut the graph, and what does each cut cost?

The rules read the shared partition prediction (:mod:`onnxlint.analyses.partition`)
for the graph ORT actually partitions in a default session: the graph after
its level-1 optimizations when ORT can produce it, else the graph as
exported. Each diagnostic says which one in ``graph_level``.

Refusals themselves (op, revision, dtype, constraint) are the OL5xx rules'
findings; OL601 reports the nodes an EP claims and still loses to CPU.

OL605 is emitted by the partition-summary stage (:mod:`onnxlint.partition_summary`),
which fills ``Report.partitions`` and ``Report.assignment``.
"""

from __future__ import annotations

from dataclasses import replace

from onnxlint.analyses.bytecount import ByteCount
from onnxlint.analyses.partition import Partitions
from onnxlint.analyses.partition_plan import Partition, PartitionPlan
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Diagnostic, Fix, Location, Severity
from onnxlint.ep_names import CPU_EP, short_ep
from onnxlint.index import NodeRef
from onnxlint.rule import Rule, register


def _deployment(ctx: LintContext) -> tuple[Partitions, PartitionPlan] | None:
    if not ctx.eps or all(p.ep == CPU_EP for p in ctx.eps):
        return None
    parts = ctx.analysis(Partitions)
    return parts, parts.deployment


def _location(ctx: LintContext, plan: PartitionPlan, path: str) -> tuple[Location, str]:
    """Location in the user's model for a node of ``plan``'s graph, and a label for messages."""
    assert plan.graph is not None
    src = plan.graph.source_path.get(path)
    node: NodeRef | None = ctx.index.node_by_path(src) if src else None
    if node is not None:
        return node.location(), node.label
    ref = next((n for n in plan.graph.index.nodes if n.path == path), None)
    if ref is None:
        return Location(), path
    # a node ORT created (fusion, inserted cast): name it, without a position in the user's file
    graph = ref.graph.path
    return Location(graph=graph, node_name=ref.name or None, op_type=ref.op_type), ref.label


def _tag(d: Diagnostic, plan: PartitionPlan) -> Diagnostic:
    return replace(d, graph_level=plan.level)


@register
class PartitionFallback(Rule):
    """A node the execution provider claims still runs on CPU, because of how ORT partitions the graph.

    What it does:
        Compares each EP's claims with the predicted partitions and reports
        claimed nodes that end up on CPU: partitions the EP drops (QNN drops a
        partition that is a lone Q or DQ node; OpenVINO drops single-node
        clusters and clusters whose Conv/Identity output is used outside) and
        shape computations ORT moves to CPU for CUDA-like EPs
        (``GetCpuPreferredNodes``).

    Why it matters:
        These fallbacks appear in no refusal log: the EP said yes and the
        node still runs on CPU, with a boundary on each side.

    Fix:
        Make the neighbouring nodes supported so that the node joins a larger
        partition, or remove the node (fold constants, drop a stray Q/DQ).

    Execution providers:
        QNN, OpenVINO, CUDA, DirectML, WebGPU, CANN (CPU preference), any compiling EP.
    """

    code = "OL601"
    name = "partition-fallback"
    category = Category.PARTITION
    severity = Severity.WARNING
    messages = {"default": "{accel} claims {node} ({op}) but {why}; it runs on CPU"}
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    s = Constant <value = float {0.1}> ()
    zp = Constant <value = uint8 {128}> ()
    q = QuantizeLinear(x, s, zp)
    d = DequantizeLinear(q, s, zp)
    y = Erf(d)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    y = Relu(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        dep = _deployment(ctx)
        if dep is None:
            return
        _, plan = dep
        la_nodes = {n.path: n for n in plan.graph.index.nodes} if plan.graph else {}
        for path, why in sorted(plan.released.items()):
            if plan.node_ep.get(path) != CPU_EP:
                continue
            ep = _releasing_ep(why, plan)
            loc, label = _location(ctx, plan, path)
            ref = la_nodes.get(path)
            d = self.make(
                loc,
                ep=ep,
                fix=Fix(
                    title=plan.release_fixes.get(path)
                    or "let the node join a larger partition, or remove it"
                ),
                accel=short_ep(ep),
                node=label,
                op=ref.op_type if ref else "?",
                why=why[len(short_ep(ep)) + 1 :] if why.startswith(short_ep(ep) + " ") else why,
            )
            ctx.emit(_tag(d, plan))


def _releasing_ep(why: str, plan: PartitionPlan) -> str:
    for ep in plan.accelerators:
        if why.startswith(short_ep(ep) + " ") or f"from {short_ep(ep)} " in why:
            return ep
    return plan.accelerators[0] if plan.accelerators else CPU_EP


@register
class FallbackIsland(Rule):
    """A few CPU nodes between two accelerator partitions: an island that costs two boundaries.

    What it does:
        Finds CPU partitions of at most ``island-max-nodes`` nodes
        (``[tool.onnxlint.partition]``, default 3) fed by an accelerator
        partition and feeding one, with the bytes that cross per inference.

    Why it matters:
        Each island splits an accelerator partition in two and pays a copy
        (device-memory EPs) or a partition switch (QNN, OpenVINO CPU) on each side.

    Fix:
        Make the island's nodes supported (see their OL5xx findings) or move
        them to the start or end of the graph.

    Execution providers:
        All accelerators.
    """

    code = "OL602"
    name = "fallback-island"
    category = Category.PARTITION
    severity = Severity.WARNING
    messages = {
        "default": "{count} CPU node(s) ({ops}) between {eps} partitions: {crossings} crossing "
        "tensor(s), {bytes} per inference ({kind})",
    }
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    b = Erf(a)
    y = Relu(b)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    b = Erf(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        dep = _deployment(ctx)
        if dep is None:
            return
        parts, plan = dep
        by_id = {p.id: p for p in plan.partitions}
        for island in plan.islands(parts.island_max_nodes):
            crossing = [c for c in plan.crossings_of(island.id) if c.crosses_eps]
            total = ByteCount.total(c.bytes for c in crossing) if crossing else None
            neighbours = _neighbour_eps(plan, island, by_id)
            memcpy = any(c.kind == "memcpy" for c in crossing)
            loc, _ = _location(ctx, plan, island.first)
            # every node of the island, so that a real session can disprove it (--confirm)
            related = tuple(_location(ctx, plan, n)[0] for n in island.nodes)
            d = self.make(
                loc,
                ep=neighbours[0] if neighbours else None,
                related=tuple(r for r in related if r.node_index is not None),
                fix=Fix(title="make these nodes supported by the accelerator, or move them"),
                count=island.size,
                ops=", ".join(dict.fromkeys(island.op_types)),
                eps=", ".join(short_ep(e) for e in neighbours) or "accelerator",
                crossings=len(crossing),
                bytes=total.describe() if total is not None else "0 B",
                kind="device copies" if memcpy else "partition switches, no copies",
            )
            ctx.emit(_tag(d, plan))


def _neighbour_eps(
    plan: PartitionPlan, island: Partition, by_id: dict[int, Partition]
) -> list[str]:
    eps: list[str] = []
    for c in plan.crossings_of(island.id):
        if c.src_partition is None:
            continue
        if island.id in c.dst_partitions:
            eps.append(by_id[c.src_partition].ep)
        if c.src_partition == island.id:
            eps += [by_id[d].ep for d in c.dst_partitions]
    return [e for e in dict.fromkeys(eps) if e != CPU_EP]


@register
class TooManyPartitions(Rule):
    """The execution provider's share of the graph is cut into more partitions than the configured limit.

    What it does:
        Counts the predicted partitions of each accelerator EP and compares the
        count with ``max-partitions`` (``[tool.onnxlint.partition]``, default 5).

    Why it matters:
        Every partition is a separately compiled graph with its own launch
        and boundary transfers; many small partitions are often slower than CPU.

    Fix:
        Remove the fallbacks that cut the graph (see OL5xx/OL601/OL602), or
        raise ``max-partitions`` when the split is intended.

    Execution providers:
        All accelerators.
    """

    code = "OL603"
    name = "too-many-partitions"
    category = Category.PARTITION
    severity = Severity.WARNING
    messages = {"default": "{verdict} on the {level} graph: more than {limit} partitions"}
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    b = Erf(a)
    c = Relu(b)
    d = Erf(c)
    e = Relu(d)
    f = Erf(e)
    g1 = Relu(f)
    h = Erf(g1)
    i = Relu(h)
    j = Erf(i)
    k = Relu(j)
    l = Erf(k)
    y = Relu(l)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    y = Relu(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        dep = _deployment(ctx)
        if dep is None:
            return
        parts, plan = dep
        for ep in plan.accelerators:
            count = len(plan.partitions_on(ep))
            if count > parts.max_partitions:
                d = self.make(
                    Location(),
                    ep=ep,
                    fix=Fix(title="remove the fallbacks that split the graph"),
                    verdict=plan.verdict_line(ep, parts.island_max_nodes),
                    level=_level_text(plan.level),
                    limit=parts.max_partitions,
                    count=count,
                )
                ctx.emit(_tag(d, plan))


@register
class AcceleratorUnused(Rule):
    """The model will not touch the accelerator at all: every node runs on CPU.

    What it does:
        Reports an accelerator EP in the list that is predicted to run no
        node of the model, with the most common reason.

    Why it matters:
        The session is created without complaint and runs entirely on CPU: a
        silent CPU run. A symbolic input dimension is the usual cause on QNN.

    Fix:
        Fix the reason given (``--assume-dim`` / free dimension overrides for
        dynamic shapes, a re-export for opsets), then lint again.

    Execution providers:
        All accelerators.
    """

    code = "OL604"
    name = "accelerator-unused"
    category = Category.PARTITION
    severity = Severity.WARNING
    messages = {
        "default": "{accel} runs none of the {count} nodes on the {level} graph: a silent CPU run; "
        "most common reason ({times}x): {reason}",
    }
    example_eps = ("qnn",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16] x) => (float[N,16] y) {
    a = Relu(x)
    y = Relu(a)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    y = Relu(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        dep = _deployment(ctx)
        if dep is None:
            return
        parts, plan = dep
        if not plan.node_ep:
            return
        la = parts.assignment.level(plan.level)
        # a later accelerator left idle because an earlier one took everything is fine:
        # only a model that runs entirely on CPU is a silent CPU run
        if any(plan.nodes_on(ep) for ep in plan.accelerators):
            return
        for ep in plan.accelerators[:1]:
            reasons: dict[str, int] = {}
            if la is not None:
                for na in la:
                    v = na.verdict_for(ep)
                    if v is not None and not v.claimed:
                        key = v.reason
                        reasons[key] = reasons.get(key, 0) + 1
                    elif path_why := plan.released.get(na.path):
                        reasons[path_why] = reasons.get(path_why, 0) + 1
            top = max(reasons.items(), key=lambda kv: kv[1]) if reasons else ("", 0)
            d = self.make(
                Location(),
                ep=ep,
                fix=Fix(
                    title="fix the most common reason and lint again",
                    command="onnxlint model.onnx --ep qnn --assume-dim NAME=VALUE",
                ),
                accel=short_ep(ep),
                count=len(plan.node_ep),
                level=_level_text(plan.level),
                times=top[1],
                reason=top[0] or "no node is claimed",
            )
            ctx.emit(_tag(d, plan))


def _level_text(level: str) -> str:
    return "level-1 optimized" if level == "optimized" else "exported"


@register
class Level1GraphUnavailable(Rule):
    """ONNX Runtime's level-1 graph could not be built: its worker hung, crashed or ran out of memory.

    What it does:
        Reports that the worker which asks ONNX Runtime (CPU only, basic optimizations)
        for the graph it partitions gave no graph because the worker itself failed: it
        gave no result within its time limit and was killed, it crashed, or it ran out of
        memory. ORT refusing the model is not this rule's finding.

    Why it matters:
        The partition predictions fall back to the exported graph, which can differ from
        what ORT partitions (constant folding, fusions); the lint also waited for the
        worker's time limit. Without this finding the wait and the fallback were silent.

    Fix:
        Run again on a less loaded machine; if it repeats, the model makes ONNX Runtime
        hang or crash on CPU: check it with ``--confirm --ep cpu``. Setting
        ``[tool.onnxlint.partition] graph-level = "exported"`` skips the worker.

    Execution providers:
        All accelerators (the level-1 graph is built for partition prediction).
    """

    code = "OL605"
    name = "level1-graph-unavailable"
    category = Category.PARTITION
    severity = Severity.WARNING
    emitted_by = "partition-report"
    messages = {
        "timeout": "ONNX Runtime's level-1 graph was not built: its worker gave no result "
        "within {seconds:g} s and was killed; partitions are predicted on the exported graph",
        "crash": "ONNX Runtime's level-1 graph was not built: its worker crashed ({detail}); "
        "partitions are predicted on the exported graph",
        "oom": "ONNX Runtime's level-1 graph was not built: its worker ran out of memory "
        "({detail}); partitions are predicted on the exported graph",
    }


@register
class OrtRejectsGraph(Rule):
    """ONNX Runtime's type and shape inference rejects the graph it partitions: no default session loads.

    What it does:
        Reports the error ONNX Runtime gives when its worker (CPU only, basic
        optimizations, with the dims the lint assumes: the worker that gives the
        partition predictions their level-1 graph) loads the model and ORT's own type and
        shape inference fails while it resolves the graph. Three causes were measured:
        constant folding turns a computed shape into a constant and the shapes ORT then
        knows do not fit (a MatMul whose inner dimensions differ: CANINE's TorchScript
        export), fixed dims that contradict a declared shape (a control-flow body's
        declared state shape: onnx-asr's wespeaker with its dims fixed), and a node output
        declared with another element type than the one ORT infers (``Type Error``: an
        Identity of a float weight declared float16, as onnxconverter-common's float16
        conversion with an op block list writes it). A lint for the CPU alone asks for
        that graph too, for this rule only (it predicts no partition).

    Why it matters:
        ORT resolves the graph before any execution provider chooses a node, so session
        creation at the default optimization level fails the same way on every EP
        (measured with the CPU, QNN HTP and OpenVINO EPs). When fixed dims contradict a
        declaration, or a declared element type is not the inferred one, it fails at every
        level; when only folding reveals the misfit, a session with optimizations
        disabled loads and the node fails when it runs. Which of the two it is, the
        worker measures: after the refusal it tries a CPU session with every
        optimization disabled. When that fails too, the finding says so, and the
        report drops what it would otherwise say about the EPs' partitions (no EP
        ever gets a node).

    Fix:
        Fix the node the error names: correct or remove the declared shape or type that
        contradicts the inferred one (the ``value_info`` or a body's input and output
        types), fix the dims to values the model was written for, or re-export the model
        so that the shape it computes fits.

    Execution providers:
        All (ORT's graph resolution precedes partitioning); reported when the lint builds
        ORT's level-1 graph, i.e. for accelerator EPs.
    """

    code = "OL606"
    name = "ort-rejects-graph"
    category = Category.PARTITION
    severity = Severity.ERROR
    status = "preview"
    since = "0.2.0"
    emitted_by = "partition-report"
    messages = {
        "default": "ONNX Runtime's type and shape inference rejects the graph, so session "
        "creation at the default optimization level fails on every EP: {error}",
        "every_level": "ONNX Runtime's type and shape inference rejects the graph, so "
        "session creation fails on every EP at every optimization level: {error}",
    }
    #: a session with every optimization disabled fails too: no EP ever gets a node
    fails_load = frozenset({"every_level"})

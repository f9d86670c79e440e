"""Partition prediction: simulate ONNX Runtime's graph partitioner for an EP list.

Starting from the per-node verdicts of :mod:`onnxlint.analyses.assignment`,
each EP in priority order takes the nodes it claims among those still
unassigned, grouped the way ORT groups them, and CPU takes the rest:

- compiling EPs that use ORT's shared partitioning utility (QNN, CoreML,
  NNAPI, XNNPACK, ...): a greedy Kahn-style topological sweep over node units
  (a QDQ group is one unit), adding claimed units to the current group until
  only unclaimed nodes that consume the group's outputs are left; those wait
  for the next group. The profile's ``drop_single_op_partitions`` then drops
  groups that are a single Q or DQ node (QNN);
- OpenVINO (profiles with ``drop_if_output_used_outside``): a fully supported
  graph is one cluster; otherwise the topological order is cut at every
  unsupported node (and at TopK/NonZero), each run is split into connected
  clusters, and clusters smaller than ``min_partition_nodes``, clusters whose
  Conv/Identity output is used outside, and clusters without a non-constant
  input are dropped;
- kernel EPs (CUDA, DML, CPU, ...) keep every node they claim; their
  "partitions" are the same greedy groups, for reporting.

Control-flow bodies are partitioned on their own, as ORT does. Every edge that
crosses between partitions is recorded with its bytes per inference (symbolic
dims kept as names unless ``assume-dims`` gives them a value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.body_refusals import control_flow_refusals
from onnxlint.analyses.bytecount import ByteCount
from onnxlint.analyses.compiled_bodies import compiled_with_parent
from onnxlint.analyses.integer_tensors import integer_tensor_refusals
from onnxlint.analyses.layout_constants import constant_rewrite_failures
from onnxlint.analyses.layout_rewrites import edges_without, layout_rewrites, regroup, reshape_of
from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import EXPORTED, OPTIMIZED, LevelGraph
from onnxlint.analyses.partition_plan import (
    DEFAULT_ISLAND_MAX_NODES,
    Crossing,
    Partition,
    PartitionPlan,
)
from onnxlint.analyses.partition_reasons import (
    boundary_failures,
    constant_only,
    empty_input_failures,
    finalize_failures,
    keep_group,
    layout_gather_crashes,
    layout_pass_failures,
    refused_units,
    tensor_dtypes,
    unfusable_group,
)
from onnxlint.analyses.partition_units import (
    UnitGraph,
    greedy_groups,
    lone_qdq_nodes,
    ov_clusters,
    qdq_units,
    unit_graph,
)
from onnxlint.ep_names import CPU_EP, short_ep
from onnxlint.index import GraphRef, NodeRef, node_edges, topological_order
from onnxlint.tensors import inline_scalar_int

if TYPE_CHECKING:
    from onnxlint.analyses.value_types import ValueType
    from onnxlint.context import LintContext
    from onnxlint.profiles import Profile
    from onnxlint.profiles.model import LayoutReshapeRewrite

__all__ = ["Partitions", "plan_level"]

DEFAULT_MAX_PARTITIONS = 5
_LOOP_OPS = frozenset({"Loop", "Scan"})


def _uses_ov_clustering(profile: Profile) -> bool:
    return profile.partitioning.grouping == "clusters"


# ---------------------------------------------------------------------------
# The simulation


def plan_level(la: LevelAssignment, assume_dims: Mapping[str, int] | None = None) -> PartitionPlan:
    """Partition every graph of one level for the EP list of ``la``."""
    lg = la.graph
    assume = dict(assume_dims or {})
    eps = [p.ep for p in la.profiles]
    plan = PartitionPlan(level=lg.level, eps=eps, note=lg.note, graph=lg)
    memory = {p.ep: p.device_memory for p in la.profiles}
    plan.memory = memory
    groups_all: list[tuple[str, GraphRef, list[str]]] = []
    for g in lg.graphs():
        nodes = lg.nodes(g)
        if not nodes:
            continue
        owner = compiled_with_parent(g, plan, la, nodes)
        if owner is not None:
            # the EP compiles the body as part of the node it claimed: no partition of its own
            for n in nodes:
                plan.node_ep[n.path] = owner
            continue
        # its locals (edges, unit graphs, type tables: tens of MB on a 100k-node graph) are
        # let go before the next graph and before the plan's numbering and crossings
        _plan_graph(plan, la, lg, g, groups_all)
    _number_partitions(plan, lg, groups_all)
    _crossings(plan, lg, assume)
    constant_only(plan, la)
    boundary_failures(plan, la)
    return plan


def _plan_graph(
    plan: PartitionPlan,
    la: LevelAssignment,
    lg: LevelGraph,
    g: GraphRef,
    groups_all: list[tuple[str, GraphRef, list[str]]],
) -> None:
    """Partition one graph for every EP of ``la`` in turn, into ``plan`` and ``groups_all``."""
    order = lg.order(g)
    # the node edges of a graph are the same for every EP: built once, not once per EP
    edges = node_edges(g, order)
    # so is the sweep's graph of single nodes (no QDQ units): made once, when first needed
    alone: list[UnitGraph] = []
    by_path = {n.path: n for n in order}
    unassigned = set(by_path)
    # the few nodes some EP's CPU preference moves, in graph order (read once per EP)
    preferred = [
        (n.path, na.cpu_preferred_by)
        for n in order
        if (na := la.get(n.path)) is not None and na.cpu_preferred_by
    ]
    for profile in la.profiles:
        ep = profile.ep
        # a function op no EP claims is inlined after this pass (_late_pass)
        claimed = {
            p
            for p in unassigned
            if (na := la.get(p)) is not None and na.claims(ep) and p not in lg.inlined_late
        }
        # in graph order, as everything written into the plan: a set's order would
        # follow string hashing and differ from run to run in the JSON report
        for p, by in preferred:
            if p in unassigned and ep in by:
                plan.released.setdefault(
                    p,
                    f"ORT moves this shape computation from {short_ep(ep)} to CPU "
                    "(GetCpuPreferredNodes: all its inputs are small CPU-side values)",
                )
        if not claimed:
            continue
        if ep == CPU_EP or profile.kind != "compiling":
            groups = greedy_groups(g, order, claimed, prepared=_nodes_alone(alone, g, order, edges))
        elif _uses_ov_clustering(profile):
            groups, released = ov_clusters(lg, g, order, claimed, profile, edges)
            for p, why in released.items():
                plan.released.setdefault(p, why)
            for grp in groups:
                plan.finalize_failures.update(finalize_failures(g, grp, by_path, profile, la))
        else:
            dtypes = tensor_dtypes(la, order)
            units = qdq_units(g, order, dtypes, profile.partitioning.qdq_selectors)
            judged = {**units, **lone_qdq_nodes(units, by_path, claimed)}
            for target, why in refused_units(judged, by_path, dtypes, profile, la).items():
                for p in judged[target]:
                    if p in claimed:
                        claimed.discard(p)
                        plan.released.setdefault(p, why)
            integer_rule = profile.partitioning.integer_tensor_registration
            if integer_rule is not None:
                for p, why in integer_tensor_refusals(
                    order, claimed, units, dtypes, integer_rule
                ).items():
                    claimed.discard(p)
                    plan.released.setdefault(p, why)
            for p, why, fix in control_flow_refusals(lg, la, g, claimed, by_path, profile):
                claimed.discard(p)
                plan.released.setdefault(p, why)
                plan.release_fixes.setdefault(p, fix)
            groups = []
            blind = profile.partitioning.grouping_ignores_captured_inputs
            grouping_edges = node_edges(g, order, captured=False) if blind else edges
            found = greedy_groups(
                g,
                order,
                claimed,
                units,
                grouping_edges,
                prepared=_nodes_alone(alone, g, order, edges) if not units and not blind else None,
                border_succs=edges[1] if blind else None,  # a capture still borders a group
            )
            first_pass = bool(found)
            rewrite = profile.partitioning.layout_reshape_rewrite
            fused_edges = edges
            if rewrite is not None and found:
                found, dropped = _second_pass(
                    lg, g, order, claimed, units, grouping_edges, found, rewrite, plan
                )
                # ORT checks the groups on the rewritten graph, without those edges
                fused_edges = edges_without(edges, dropped)
            unfusable = unfusable_group(found, fused_edges) if blind else None
            if unfusable is not None:
                # ORT's plugin host refuses the EP's whole answer for this graph
                why = (
                    f"ORT refuses {short_ep(ep)}'s capability for this graph: "
                    f"{short_ep(ep)} groups nodes across a value an If/Loop body "
                    f"captures ({unfusable}), and a group with an unsupported node on "
                    "a path between its nodes cannot be fused"
                )
                for p in (n.path for n in order if n.path in claimed):
                    plan.released.setdefault(p, why)
                found = []
            for grp in found:
                refusal = keep_group(grp, by_path, profile)
                if refusal is None:
                    groups.append(grp)
                else:
                    for p in grp:
                        plan.released.setdefault(p, refusal)
            kept = {p for grp in groups for p in grp}
            plan.layout_failures.update(layout_pass_failures(kept, units, by_path, la, profile))
            plan.finalize_failures.update(layout_gather_crashes(kept, by_path, la, profile))
            if first_pass and found and profile.partitioning.layout_constant_rewrite:
                plan.layout_constant_failures.update(
                    constant_rewrite_failures(
                        lg, la, g, order, claimed, units, fused_edges, profile
                    )
                )
            for grp in groups:
                plan.finalize_failures.update(finalize_failures(g, grp, by_path, profile, la))
                plan.finalize_failures.update(empty_input_failures(grp, by_path, la, profile))
        for grp in groups:
            for p in grp:
                plan.node_ep[p] = ep
                unassigned.discard(p)
            groups_all.append((ep, g, grp))
    late = [n.path for n in order if n.path in lg.inlined_late and n.path in unassigned]
    if late:
        _late_pass(lg, la, g, order, edges, alone, late, unassigned, plan, groups_all)
    # anything left (CPU refused it too) still runs nowhere else: report it on CPU
    if unassigned:
        rest = [p for p in (n.path for n in order) if p in unassigned]
        for p in rest:
            plan.node_ep[p] = CPU_EP
        for grp in greedy_groups(
            g, order, set(rest), prepared=_nodes_alone(alone, g, order, edges)
        ):
            groups_all.append((CPU_EP, g, grp))


def _second_pass(
    lg: LevelGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    claimed: set[str],
    units: Mapping[str, list[str]],
    edges: tuple[dict[str, list[str]], dict[str, list[str]]],
    found: list[list[str]],
    rewrite: LayoutReshapeRewrite,
    plan: PartitionPlan,
) -> tuple[list[list[str]], dict[str, str]]:
    """The EP's groups after ORT's layout transform, when its transpose optimizer gives
    Reshapes of the groups ``found`` a constant shape (``layout_rewrites``); an orphaned
    Gather that makes a graph of its own marks its Shape as a finalize failure. Also the
    dropped edges (Reshape -> the producer of the shape it no longer reads; a Shape of a
    Transpose -> the Transpose)."""
    kept = {p for grp in found for p in grp}
    rewrites = layout_rewrites(lg, g, order, kept, rewrite.extra_layout_ops)
    if not rewrites:
        return found, {}
    ug = unit_graph(g, order, units, edges_without(edges, rewrites.dropped))
    groups, failed = regroup(rewrites, ug, g, order, claimed)
    by_path = {n.path: n for n in order}
    for shape in failed:
        # reported on the Reshape (a QNN node), which the Shape (a CPU node) fed
        reshape = reshape_of(rewrites, shape, by_path)
        if reshape is not None:
            plan.finalize_failures.setdefault(
                reshape,
                f"ORT's layout transform gives this Reshape a constant shape in place of the "
                f"output of {by_path[shape].label}: {rewrite.orphan_reason}",
            )
    return groups, {**rewrites.dropped, **rewrites.moved}


def _late_pass(
    lg: LevelGraph,
    la: LevelAssignment,
    g: GraphRef,
    order: Sequence[NodeRef],
    edges: tuple[dict[str, list[str]], dict[str, list[str]]],
    alone: list[UnitGraph],
    late: list[str],
    unassigned: set[str],
    plan: PartitionPlan,
    groups_all: list[tuple[str, GraphRef, list[str]]],
) -> None:
    """ORT's partitioning after it inlines the function ops no EP claimed (``late``, the
    nodes they expand into): each EP in turn chooses among those nodes again, and its
    groups are partitions of their own. An EP whose clusters also take nodes already on
    the CPU (``late_pass_takes_assigned``) gets none of a cluster that holds one."""
    on_cpu = {p for p, ep in plan.node_ep.items() if ep == CPU_EP}
    by_path = {n.path: n for n in order}
    # ORT sorts the graph again once it has inlined the op (the level-1 file's order is
    # that of the graph before the inlining)
    order = topological_order(g, lg.nodes(g)) if lg.level == OPTIMIZED else order
    edges = node_edges(g, order) if lg.level == OPTIMIZED else edges
    for profile in la.profiles:
        ep = profile.ep
        claimed = {p for p in late if p in unassigned and (na := la.get(p)) and na.claims(ep)}
        if not claimed:
            continue
        if _uses_ov_clustering(profile):
            pool = set(claimed)
            if profile.partitioning.late_pass_takes_assigned:
                pool |= {p for p in on_cpu if (na := la.get(p)) is not None and na.claims(ep)}
            found, released = ov_clusters(lg, g, order, pool, profile, edges)
            groups = []
            for grp in found:
                held = next((p for p in grp if p in on_cpu), None)
                if held is None:
                    groups.append(grp)
                    continue
                for p in grp:
                    if p in claimed:
                        plan.released.setdefault(
                            p,
                            f"{short_ep(ep)} takes this node (from a function op ORT inlines "
                            "after the first partitioning) into one subgraph with "
                            f"{by_path[held].label}, which already runs on CPU, "
                            "and ORT refuses that subgraph",
                        )
            for p, why in released.items():
                if p in claimed:
                    plan.released.setdefault(p, why)
        else:
            prepared = _nodes_alone(alone, g, order, edges) if lg.level != OPTIMIZED else None
            groups = greedy_groups(g, order, claimed, edges=edges, prepared=prepared)
        for grp in groups:
            for p in grp:
                plan.node_ep[p] = ep
                unassigned.discard(p)
            groups_all.append((ep, g, grp))


def _nodes_alone(
    made: list[UnitGraph],
    g: GraphRef,
    order: Sequence[NodeRef],
    edges: tuple[dict[str, list[str]], dict[str, list[str]]],
) -> UnitGraph:
    """The :class:`UnitGraph` of ``g``'s nodes one by one, kept in ``made`` (the graph's own
    list) for the next EP that groups them without QDQ units."""
    if not made:
        made.append(unit_graph(g, order, None, edges))
    return made[0]


def _number_partitions(
    plan: PartitionPlan, lg: LevelGraph, groups: list[tuple[str, GraphRef, list[str]]]
) -> None:
    graph_rank = {g.path: i for i, g in enumerate(lg.graphs())}
    pos: dict[str, int] = {}
    for g in lg.graphs():
        pos.update(lg.positions(g))
    by_path = {n.path: n for n in lg.index.nodes}
    # top-down, as a reader of the model meets each partition's first node; nodes with no
    # place in the model as written (made by level-1 fusions) go by ORT's order after them
    ranks, source = lg.source_rank, lg.source_path

    def top(grp: list[str]) -> int:
        found = [ranks[s] for p in grp if (s := source.get(p)) is not None and s in ranks]
        return min(found, default=len(ranks))

    groups.sort(key=lambda t: (top(t[2]), graph_rank[t[1].path], min(pos[p] for p in t[2])))
    for i, (ep, g, grp) in enumerate(groups, 1):
        ordered = sorted(grp, key=lambda p: pos[p])
        plan.partitions.append(
            Partition(
                id=i,
                ep=ep,
                graph=g.path,
                nodes=ordered,
                op_types=[by_path[p].op_type for p in ordered],
                source_nodes=[lg.source_path.get(p) for p in ordered],
            )
        )


def _loop_note(lg: LevelGraph, g: GraphRef) -> str | None:
    """How often an edge inside ``g`` is paid per inference, when ``g`` is a loop body."""
    cur: GraphRef | None = g
    notes: list[str] = []
    while cur is not None and cur.parent is not None:
        owner = cur.parent
        if owner.op_type in _LOOP_OPS:
            trips = None
            if owner.op_type == "Loop" and owner.inputs and owner.inputs[0]:
                trips = _scalar_initializer(owner.graph, owner.inputs[0])
            notes.append(f"x{trips}" if trips is not None else f"x {owner.op_type} trip count")
        cur = owner.graph
    return " ".join(notes) + " per inference (inside a loop body)" if notes else None


def _scalar_initializer(g: GraphRef, name: str) -> int | None:
    # inline data only: an external location is never followed (it would resolve
    # against the working directory, and its bytes would reach the report)
    cur: GraphRef | None = g
    while cur is not None:
        t = cur.initializers.get(name)
        if t is not None:
            return inline_scalar_int(t)
        p = cur.producers.get(name)
        if p is not None:
            if p.op_type == "Constant":
                for a in p.node.attribute:
                    if a.name == "value":
                        return inline_scalar_int(a.t)
            return None
        cur = cur.outer
    return None


#: a partition's inputs or outputs up to this many are searched in its list, without a set
_SCANNED_NAMES = 8


def _crossings(plan: PartitionPlan, lg: LevelGraph, assume: Mapping[str, int]) -> None:
    part_of: dict[str, Partition] = {}
    for p in plan.partitions:
        for path in p.nodes:
            part_of[path] = p
    # a partition's inputs and outputs, as sets beside its lists once they are long (a CPU
    # partition of a large graph has thousands: a list scan per edge was quadratic; a set
    # for each of the 31k small partitions of the 100k-node graph with every EP held 16 MB),
    # and the byte counts of its edges, summed once at the end (adding counts pairwise
    # re-sorted their terms per edge)
    seen_in: dict[int, set[str]] = {}
    seen_out: dict[int, set[str]] = {}
    moved: dict[int, list[ByteCount]] = {p.id: [p.bytes] for p in plan.partitions}

    def add(p: Partition, names: list[str], seen: dict[int, set[str]], name: str) -> bool:
        if len(names) <= _SCANNED_NAMES:
            if name in names:
                return False
        else:
            known = seen.get(p.id)
            if known is None:
                known = seen[p.id] = set(names)
            if name in known:
                return False
            known.add(name)
        names.append(name)
        return True

    def add_input(p: Partition, name: str, count: ByteCount) -> None:
        if add(p, p.inputs, seen_in, name):
            moved[p.id].append(count)

    def add_output(p: Partition, name: str, count: ByteCount) -> None:
        if add(p, p.outputs, seen_out, name):
            moved[p.id].append(count)

    # the count of a value type (a count never changes): one object per distinct type
    counts: dict[ValueType, ByteCount] = {}

    def count(vt: ValueType) -> ByteCount:
        got = counts.get(vt)
        if got is None:
            got = counts[vt] = ByteCount.of(vt.dtype, vt.shape, assume)
        return got

    for g in lg.graphs():
        nodes = lg.nodes(g)
        if not nodes:
            continue
        note = _loop_note(lg, g) if g.depth > 0 else None
        entering: dict[str, list[Partition]] = {}
        for n in nodes:
            dst = part_of.get(n.path)
            if dst is None:
                continue
            names = list(n.inputs)
            for sub in n.subgraphs.values():
                names += sorted(sub.captured)
            for name in names:
                if not name or lg.is_initializer(g, name):
                    continue
                # a producer is a node of this level's index, as every node ``part_of`` has
                prod = g.producers.get(name)
                src = part_of.get(prod.path) if prod is not None else None
                if src is dst:
                    continue
                lst = entering.setdefault(name, [])
                if dst not in lst:
                    lst.append(dst)
        for name, dsts in entering.items():
            prod = g.producers.get(name)
            src = part_of.get(prod.path) if prod is not None else None
            vt = lg.value_type(g, name)
            src_ep = src.ep if src is not None else None
            dst_eps = [d.ep for d in dsts]
            mem = {plan.memory.get(e, "host") for e in [*dst_eps, *([src_ep] if src_ep else [])]}
            crosses = src_ep is not None and any(e != src_ep for e in dst_eps)
            kind = "none"
            if crosses:
                kind = "memcpy" if "device" in mem else "partition-switch"
            c = Crossing(
                tensor=name,
                graph=g.path,
                src_partition=src.id if src is not None else None,
                src_ep=src_ep,
                dst_partitions=[d.id for d in dsts],
                dst_eps=dst_eps,
                dtype=vt.dtype,
                shape=vt.shape,
                bytes=count(vt),
                kind=kind,
                repeat=note,
            )
            plan.crossings.append(c)
            for d in dsts:
                add_input(d, name, c.bytes)
            if src is not None:
                add_output(src, name, c.bytes)
        for name in g.outputs:
            prod = g.producers.get(name)
            src = part_of.get(prod.path) if prod is not None else None
            if src is not None and name not in (seen_out.get(src.id) or src.outputs):
                vt = lg.value_type(g, name)
                add_output(src, name, count(vt))
    # equal totals (most partitions move the same few types) are one object
    totals: dict[ByteCount, ByteCount] = {}
    for p in plan.partitions:
        if len(moved[p.id]) > 1:
            total = ByteCount.total(moved[p.id])
            p.bytes = totals.setdefault(total, total)


# ---------------------------------------------------------------------------
# The shared analysis


class Partitions:
    """``ctx.analysis(Partitions)``: the predicted partitioning per graph level, computed once.

    ``deployment_level`` is the level diagnostics talk about: the graph after
    ORT's level-1 optimizations (what a default session partitions) when ORT
    can produce it and ``[tool.onnxlint.partition] graph-level`` does not say
    ``exported``; otherwise the graph as exported.
    """

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.assignment: Assignment = ctx.analysis(Assignment)
        self._plans: dict[str, PartitionPlan | None] = {}
        opts = ctx.config.partition or {}
        self.island_max_nodes = int(opts.get("island-max-nodes", DEFAULT_ISLAND_MAX_NODES))
        self.max_partitions = int(opts.get("max-partitions", DEFAULT_MAX_PARTITIONS))
        self.wanted_level = str(opts.get("graph-level", OPTIMIZED))

    def plan(self, level: str) -> PartitionPlan | None:
        if level not in self._plans:
            la = self.assignment.level(level)
            self._plans[level] = (
                plan_level(la, self.ctx.config.assume_dims) if la is not None else None
            )
        return self._plans[level]

    @property
    def deployment_level(self) -> str:
        if self.wanted_level == OPTIMIZED and self.plan(OPTIMIZED) is not None:
            return OPTIMIZED
        return EXPORTED

    @property
    def deployment(self) -> PartitionPlan:
        got = self.plan(self.deployment_level)
        assert got is not None
        return got

    def plans(self) -> list[PartitionPlan]:
        out = [p for p in (self.plan(EXPORTED),) if p is not None]
        if self.wanted_level == OPTIMIZED:
            opt = self.plan(OPTIMIZED)
            if opt is not None:
                out.append(opt)
            elif out and self.assignment.optimized_note:
                # say why the default-session graph is missing rather than omit it silently
                out[0].note = f"no level-1 graph: {self.assignment.optimized_note}"
        return out

"""Control-flow bodies an EP compiles as part of the node it claims (OpenVINO: ``If``,
profile ``partitioning.bodies_compiled_with_node``): such a body gets no partition of its
own while the EP supports every node of it; otherwise the partitioner partitions it like any
graph, and the parent fails (``claimed_body_partition_fails``, OL511)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnxlint.analyses.level_assignment import LevelAssignment
    from onnxlint.analyses.partition_plan import PartitionPlan
    from onnxlint.index import GraphRef, NodeRef
    from onnxlint.profiles import Profile


def compiled_with_parent(
    g: GraphRef, plan: PartitionPlan, la: LevelAssignment, nodes: Sequence[NodeRef]
) -> str | None:
    """The EP that claimed ``g``'s parent node when its profile compiles such bodies whole
    and it claims every node of this one. A body it refuses a node of is partitioned like
    any graph (OpenVINO asked for a body answers with the whole graph only when it supports
    every node, and a graph without inputs, as a branch is, then gets no partition; with a
    node it refuses, it clusters the body, whose outer-scope values are cluster inputs):
    the parent, compiled with a body that holds a partition of its own, then fails
    (``claimed_body_partition_fails``, OL511)."""
    parent = g.parent
    if parent is None:
        return None
    ep = plan.node_ep.get(parent.path)
    prof = next((p for p in la.profiles if p.ep == ep), None)
    if prof is None or parent.op_type not in prof.partitioning.bodies_compiled_with_node:
        return None
    for n in nodes:
        na = la.get(n.path)
        v = na.verdict_for(ep) if na is not None and ep is not None else None
        if v is None or (not v.claimed and not _claimed_whatever_the_size(la, n, prof)):
            return None
    return ep


def _claimed_whatever_the_size(la: LevelAssignment, n: NodeRef, profile: Profile) -> bool:
    """Whether ``profile`` claims ``n`` when the size of its graph is not asked: the EP's
    refusals of the first node of a small graph (``graph_nodes_at_most``) come after it
    found every node of the graph supported, which is what compiles a body whole."""
    from onnxlint.analyses.capability import evaluate
    from onnxlint.analyses.node_facts import node_facts

    return evaluate(profile, node_facts(la.graph, n, None)).claimed

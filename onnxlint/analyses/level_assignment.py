"""Verdicts of every EP for each node of one level graph, and which EP claims it first."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onnxlint.analyses.capability import NodeFacts, Verdict
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.ep_names import CPU_EP
from onnxlint.index import NodeRef

if TYPE_CHECKING:
    from onnxlint.profiles import Profile


@dataclass(frozen=True, slots=True)
class NodeAssignment:
    """Verdicts of every EP for one node, and which EP claims it first."""

    node: NodeRef
    facts: NodeFacts
    #: one verdict per EP in priority order (CPU last)
    verdicts: tuple[Verdict, ...]
    #: EP (ORT name) of the first profile that claims the node, CPU when none does
    first_claimer: str
    #: EPs whose claim ORT withdraws because of its CPU preference for shape computations
    cpu_preferred_by: tuple[str, ...] = ()
    #: the node sits in a control-flow body that an EP needing static control flow never sees
    in_body_refused_by: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return self.node.path

    def verdict_for(self, ep: str) -> Verdict | None:
        for v in self.verdicts:
            if v.ep == ep:
                return v
        return None

    def claims(self, ep: str) -> bool:
        """Whether ``ep``'s GetCapability would offer this node (before grouping)."""
        v = self.verdict_for(ep)
        if v is None or not v.claimed:
            return False
        return ep not in self.cpu_preferred_by and ep not in self.in_body_refused_by


def first_claimer(
    eps: tuple[str, ...],
    verdicts: tuple[Verdict, ...],
    cpu_preferred_by: tuple[str, ...] = (),
    in_body_refused_by: tuple[str, ...] = (),
) -> str:
    """The first EP of ``eps`` (priority order) whose claim :meth:`NodeAssignment.claims`
    would confirm for a node with these verdicts, CPU when none."""
    for ep in eps:
        v = next((v for v in verdicts if v.ep == ep), None)
        if (
            v is not None
            and v.claimed
            and ep not in cpu_preferred_by
            and ep not in in_body_refused_by
        ):
            return ep
    return CPU_EP


@dataclass(eq=False)
class LevelAssignment:
    """Facts, verdicts and first claimer of every partitioned node at one graph level."""

    graph: LevelGraph
    profiles: list[Profile]
    nodes: dict[str, NodeAssignment] = field(default_factory=dict)

    @property
    def level(self) -> str:
        return self.graph.level

    def __iter__(self) -> Iterator[NodeAssignment]:
        return iter(self.nodes.values())

    def get(self, node: NodeRef | str) -> NodeAssignment | None:
        return self.nodes.get(node if isinstance(node, str) else node.path)

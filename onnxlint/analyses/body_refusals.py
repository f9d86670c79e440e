"""Control-flow nodes an EP refuses for what their bodies hold: a body that reads an
initializer of an enclosing graph (``partitioning.refuses_captured_initializers``), and a
body with a node the EP does not take, where it builds the bodies with the node
(``partitioning.refuses_unsupported_bodies``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from onnxlint.ep_names import short_ep

if TYPE_CHECKING:
    from onnxlint.analyses.level_assignment import LevelAssignment
    from onnxlint.analyses.level_graph import LevelGraph
    from onnxlint.index import GraphRef, NodeRef
    from onnxlint.profiles import Profile

__all__ = ["control_flow_refusals"]


def captured_initializer_refusals(
    lg: LevelGraph,
    g: GraphRef,
    claimed: set[str],
    by_path: Mapping[str, NodeRef],
    profile: Profile,
) -> list[tuple[str, str, str]]:
    """The claimed control-flow nodes the profile refuses because a body reads an
    initializer of an enclosing graph (``refuses_captured_initializers``), with why and
    the fix."""
    reasons = dict(profile.partitioning.refuses_captured_initializers)
    out: list[tuple[str, str, str]] = []
    if not reasons:
        return out
    for p in sorted(claimed):
        n = by_path[p]
        if n.op_type not in reasons:
            continue
        names = sorted(
            name
            for sub in n.subgraphs.values()
            for name in sub.captured
            if lg.is_initializer(g, name)
        )
        if names:
            out.append(
                (
                    p,
                    f"{short_ep(profile.ep)} refuses this {n.op_type}: a body reads "
                    f"`{names[0]}`, an initializer of the enclosing graph; {reasons[n.op_type]}",
                    f"make `{names[0]}` an initializer of each branch that reads it (or "
                    "compute it inside the branch)",
                )
            )
    return out


def control_flow_refusals(
    lg: LevelGraph,
    la: LevelAssignment,
    g: GraphRef,
    claimed: set[str],
    by_path: Mapping[str, NodeRef],
    profile: Profile,
) -> list[tuple[str, str, str]]:
    """The claimed control-flow nodes of ``g`` the profile refuses for their bodies, with
    why and the fix (:func:`captured_initializer_refusals`,
    :func:`unsupported_body_refusals`)."""
    return [
        *captured_initializer_refusals(lg, g, claimed, by_path, profile),
        *unsupported_body_refusals(la, claimed, by_path, profile),
    ]


def unsupported_body_refusals(
    la: LevelAssignment, claimed: set[str], by_path: Mapping[str, NodeRef], profile: Profile
) -> list[tuple[str, str, str]]:
    """The claimed control-flow nodes the profile refuses because it does not take a node
    of their bodies, nested bodies included (``refuses_unsupported_bodies``: the EP builds
    the bodies with the node), with why and the fix."""
    reasons = dict(profile.partitioning.refuses_unsupported_bodies)
    out: list[tuple[str, str, str]] = []
    if not reasons:
        return out
    ep = short_ep(profile.ep)
    for p in sorted(claimed):
        n = by_path[p]
        if n.op_type not in reasons:
            continue
        refused = _refused_body_node(la, n, profile.ep)
        if refused is not None:
            out.append(
                (
                    p,
                    f"{ep} refuses this {n.op_type}: it does not take {refused.label} "
                    f"({refused.op_type}) of its body; {reasons[n.op_type]}",
                    f"make every node of the bodies one {ep} takes (or accept the fallback)",
                )
            )
    return out


def _refused_body_node(la: LevelAssignment, n: NodeRef, ep: str) -> NodeRef | None:
    """The first node of ``n``'s bodies (nested ones included) that ``ep`` does not claim."""
    lg = la.graph
    stack = list(n.subgraphs.values())  # in the node's attribute order
    while stack:
        sub = stack.pop(0)
        for m in lg.nodes(sub):
            na = la.get(m.path)
            v = na.verdict_for(ep) if na is not None else None
            if v is not None and not v.claimed:
                return m
            stack.extend(m.subgraphs.values())
    return None

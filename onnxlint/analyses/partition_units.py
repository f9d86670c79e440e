"""Node units and grouping: the QDQ units ORT's selectors form (one unit is placed whole),
the greedy topological grouping of ORT's shared partitioning utility, and OpenVINO's
clustering."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.qdq_selectors import original_dq_owner, selected_units
from onnxlint.ep_names import short_ep
from onnxlint.index import GraphRef, NodeRef, node_edges

if TYPE_CHECKING:
    from onnxlint.profiles import Profile
    from onnxlint.profiles.model import QdqSelector

#: ops that always end an OpenVINO cluster (the EP refuses to put them inside one)
_QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})


#: ops whose QDQ selector takes a third DequantizeLinear input (the bias) only when it
#: dequantizes int32 (ORT qdq_selectors.cc: Conv, ConvTranspose, Gemm, Instance- and
#: LayerNormalization); with any other bias type the unit does not form
_INT32_BIAS_OPS = frozenset(
    {"Conv", "ConvTranspose", "Gemm", "InstanceNormalization", "LayerNormalization"}
)

#: ops whose QDQ selector needs at least this many DequantizeLinear inputs (onnxruntime-qnn
#: qnn_ep_utils.cc, OrtBatchNormalizationNodeGroupSelector: 3 to 5, whichever slots they
#: feed); with fewer the unit does not form
_LEAST_DQS: dict[str, int] = {"BatchNormalization": 3}


def lone_qdq_nodes(
    units: Mapping[str, list[str]], by_path: Mapping[str, NodeRef], claimed: set[str]
) -> dict[str, list[str]]:
    """The claimed QuantizeLinear and DequantizeLinear nodes outside every unit of
    ``units``, each as a unit of its own (``refused_qdq_units`` may name them: QNN HTP
    leaves a lone int32 DequantizeLinear to the CPU)."""
    members = {p for unit in units.values() for p in unit}
    return {
        p: [p]
        for p, n in by_path.items()
        if p in claimed and p not in members and n.op_type in _QDQ_OPS
    }


def qdq_units(
    g: GraphRef,
    nodes: Sequence[NodeRef],
    dtypes: Mapping[str, str | None] | None = None,
    selectors: Sequence[QdqSelector] = (),
) -> dict[str, list[str]]:
    """Target node path -> the nodes of its QDQ unit in order (DQs, target, Qs).

    A unit forms around a non-Q/DQ node whose inputs come from DequantizeLinear nodes
    and whose outputs all go to QuantizeLinear nodes (ORT's QDQ selectors, simplified).
    ``dtypes`` (tensor name -> element type) enables the selectors' type checks: the
    first DQ's quantized type must be the Q's output type, and a bias DQ of the ops in
    ``_INT32_BIAS_OPS`` must be int32. An op of ``_LEAST_DQS`` needs that many DQ
    inputs. Nodes outside any unit are their own unit.

    Before any EP sees the graph, at every optimization level, ORT gives each input a
    DequantizeLinear feeds its own copy of that DQ (``EnsureUniqueDQForNodeUnit``, see
    :func:`onnxlint.analyses.qdq_selectors.original_dq_owner`): a DQ shared by several readers is a unit DQ of each of
    them. The copies are not nodes of the model; a unit lists the original DQ only
    where ORT left it to that input.

    ``selectors``: the EP's own selectors (:class:`QdqSelector`), which replace the rules
    above (:func:`onnxlint.analyses.qdq_selectors.selected_units`).
    """
    if selectors:
        return selected_units(g, nodes, dtypes or {}, selectors)
    paths = {n.path for n in nodes}
    outputs = set(g.outputs)
    units: dict[str, list[str]] = {}
    taken: set[str] = set()
    owners: dict[str, tuple[str, int] | None] = {}

    for n in nodes:
        if n.op_type in _QDQ_OPS or n.domain != "ai.onnx":
            continue
        dqs: list[NodeRef] = []
        fed = 0  # inputs a DQ feeds, copies included
        for slot, name in enumerate(n.inputs):
            p = g.producers.get(name) if name else None
            if p is None or p.path not in paths or p.op_type != "DequantizeLinear":
                continue
            fed += 1
            if p.path not in owners:
                owners[p.path] = original_dq_owner(g, p, paths, outputs)
            if owners[p.path] == (n.path, slot):
                dqs.append(p)
        if not fed or fed < _LEAST_DQS.get(n.op_type, 1):
            continue
        qs: list[NodeRef] = []
        ok = True
        for name in n.outputs:
            if not name:
                continue
            cons = [c for c in g.consumers.get(name, []) if c.path in paths]
            if name in outputs or not cons or any(c.op_type != "QuantizeLinear" for c in cons):
                ok = False
                break
            qs += [c for c in cons if c.path not in taken]
        if not ok or not qs or not _selector_types_match(n, qs, dtypes):
            continue
        members = [d.path for d in dqs] + [n.path] + [q.path for q in qs]
        units[n.path] = members
        taken.update(members)
    return units


def _selector_types_match(
    n: NodeRef, qs: Sequence[NodeRef], dtypes: Mapping[str, str | None] | None
) -> bool:
    if dtypes is None:
        return True
    first = dequantized_type(n, 0, dtypes)
    out = dtypes.get(qs[0].outputs[0]) if qs[0].outputs else None
    if first is not None and out is not None and first != out:
        return False
    bias = dequantized_type(n, 2, dtypes) if n.op_type in _INT32_BIAS_OPS else None
    return bias is None or bias == "int32"


@dataclass(frozen=True, slots=True)
class UnitGraph:
    """The graph :func:`greedy_groups` sweeps: units (a QDQ unit, or one node) with their
    members, the unit-level edges with multiplicity (as ORT counts input edges) and the
    roots in graph order. It depends on the graph and the units only, not on what an EP
    claims: EPs without units on one graph share one (:func:`unit_graph`). Read only."""

    #: the members of each unit that is not one node alone (most units of most graphs are)
    members_of: dict[str, list[str]]
    in_degree: dict[str, int]
    out_edges: dict[str, list[str]]
    roots: list[str]
    #: the units that border a group once the unit joins it, where they differ from
    #: ``out_edges`` (:func:`unit_graph`'s ``border_succs``); None: ``out_edges``
    border_edges: dict[str, list[str]] | None = None


def unit_graph(
    g: GraphRef,
    order: Sequence[NodeRef],
    units: Mapping[str, list[str]] | None = None,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
    border_succs: Mapping[str, list[str]] | None = None,
) -> UnitGraph:
    """The :class:`UnitGraph` of ``g`` (``order`` its topological order) for ``units``.

    ``border_succs``: node successors that border a group when the sweep takes their
    predecessor into it, where they are not those of ``edges`` (an EP whose sweep orders
    nodes by their explicit inputs only, while every reader of a group's value, a body
    that captures it included, borders the group)."""
    preds, succs = edges or node_edges(g, order)
    if not units:
        # each node its own unit: the node edges are the unit edges (``node_edges`` keeps no
        # edge from a node to itself), the successor lists read as they are
        paths = [n.path for n in order]
        degrees = {p: len(preds[p]) for p in paths}
        return UnitGraph(
            {},
            degrees,
            succs,
            [p for p in paths if not degrees[p]],
            dict(border_succs) if border_succs is not None else None,
        )
    unit_of: dict[str, str] = {}
    for target, members in units.items():
        for m in members:
            unit_of[m] = target
    for n in order:
        unit_of.setdefault(n.path, n.path)
    members_of: dict[str, list[str]] = {}
    for n in order:
        members_of.setdefault(unit_of[n.path], []).append(n.path)
    for target, members in units.items():
        members_of[target] = list(members)

    # unit-level edges with multiplicity, as ORT counts input edges
    in_degree: dict[str, int] = {}
    out_edges: dict[str, list[str]] = {}
    border_edges: dict[str, list[str]] | None = {} if border_succs is not None else None
    for u, members in members_of.items():
        mset = set(members)
        in_degree[u] = sum(1 for m in members for p in preds[m] if p not in mset)
        out_edges[u] = [unit_of[s] for m in members for s in succs[m] if s not in mset]
        if border_edges is not None and border_succs is not None:
            border_edges[u] = [
                unit_of[s] for m in members for s in border_succs.get(m, ()) if s not in mset
            ]
    roots = []
    seen_units: set[str] = set()
    for n in order:
        u = unit_of[n.path]
        if u in seen_units:
            continue
        seen_units.add(u)
        if in_degree[u] == 0:
            roots.append(u)
    several = {u: members for u, members in members_of.items() if members != [u]}
    return UnitGraph(several, in_degree, out_edges, roots, border_edges)


def greedy_groups(
    g: GraphRef,
    order: Sequence[NodeRef],
    supported: set[str],
    units: Mapping[str, list[str]] | None = None,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
    prepared: UnitGraph | None = None,
    border_succs: Mapping[str, list[str]] | None = None,
) -> list[list[str]]:
    """ORT's greedy partition node groups (a wave per group over a Kahn topological sweep).

    ``order`` is the graph's topological order; ``supported`` the node paths
    the EP may take; ``units`` maps a unit's target node to its members; ``border_succs``:
    see :func:`unit_graph`; ``prepared``: the :func:`unit_graph` of these (then ``units``,
    ``edges`` and ``border_succs`` are not read), which the sweep does not change.
    """
    ug = prepared if prepared is not None else unit_graph(g, order, units, edges, border_succs)
    members_of, out_edges = ug.members_of, ug.out_edges
    border_edges = ug.border_edges
    in_degree = dict(ug.in_degree)  # counted down by the sweep
    roots = ug.roots
    to_process: deque[str] = deque(roots)
    next_group: deque[str] = deque()
    groups: list[list[str]] = []
    group: list[str] = []
    border: set[str] = set()
    while to_process or next_group:
        if not to_process:
            if group:
                groups.append(group)
            group, border = [], set()
            to_process, next_group = next_group, deque()
            continue
        u = to_process.popleft()
        members = members_of.get(u)
        ok = u in supported if members is None else all(m in supported for m in members)
        if not ok and u in border:
            next_group.append(u)
            continue
        if ok:
            if members is None:
                group.append(u)
            else:
                group.extend(members)
            border.discard(u)
            if border_edges is not None:
                border.update(border_edges.get(u, out_edges[u]))
        for d in out_edges[u]:
            if ok and border_edges is None:
                border.add(d)
            in_degree[d] -= 1
            if in_degree[d] == 0:
                to_process.append(d)
    if group:
        groups.append(group)
    return groups


def ov_clusters(
    lg: LevelGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    supported: set[str],
    profile: Profile,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
) -> tuple[list[list[str]], dict[str, str]]:
    """OpenVINO's clusters, and why claimed nodes outside every kept cluster were released."""
    released: dict[str, str] = {}
    paths = [n.path for n in order]
    by_path = {n.path: n for n in order}
    ep = short_ep(profile.ep)
    has_real_input = any(lg.is_graph_input(g, i) for i in g.inputs) or g.depth > 0
    if all(p in supported for p in paths):
        if not has_real_input or not paths:
            for p in paths:
                released[p] = f"{ep} claims nothing in a graph without non-constant inputs"
            return [], released
        return [list(paths)], released
    cuts = {
        p
        for p in paths
        if p not in supported or by_path[p].op_type in profile.partitioning.cluster_breakers
    }
    for p in paths:
        if p in supported and p in cuts:
            released[p] = f"{ep} never keeps {by_path[p].op_type} inside a cluster"
    runs: list[list[str]] = []
    cur: list[str] = []
    for p in paths:
        if p in cuts:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(p)
    if cur:
        runs.append(cur)
    preds, succs = edges or node_edges(g, order)
    clusters: list[list[str]] = []
    for run in runs:
        remaining = list(run)
        while remaining:
            comp: list[str] = []
            stack = [remaining[0]]
            rset = set(remaining)
            while stack:
                x = stack.pop()
                if x not in rset:
                    continue
                rset.discard(x)
                comp.append(x)
                stack.extend(reversed(succs[x]))
                stack.extend(reversed(preds[x]))
            remaining = [r for r in remaining if r in rset]
            clusters.append(sorted(comp, key=paths.index))
    part = profile.partitioning
    clusters = _merge_small_clusters(
        clusters, preds, succs, max(part.min_partition_nodes, 1), paths
    )
    kept: list[list[str]] = []
    for i, cl in enumerate(clusters):
        cset = set(cl)
        why: str | None = None
        last_kept = part.keeps_last_small_cluster and i == len(clusters) - 1
        if len(cl) < max(part.min_partition_nodes, 1) and not last_kept:
            why = f"{ep} drops clusters of fewer than {part.min_partition_nodes} nodes"
        else:
            for p in cl:
                n = by_path[p]
                if n.op_type in part.drop_if_output_used_outside and n.outputs:
                    out0 = n.outputs[0]
                    if any(
                        c.path not in cset for c in g.consumers.get(out0, []) if c.path in by_path
                    ):
                        why = (
                            f"{ep} drops a cluster whose {n.op_type} output is used outside it "
                            f"({n.label})"
                        )
                        break
        if why is None:
            # initializers count as cluster inputs too (GetInputsOutputsOfCluster appends
            # them): only a cluster with no input at all is left to CPU's constant folding
            inputs = {
                name
                for p in cl
                for name in by_path[p].inputs
                if name and not (g.producers.get(name) and g.producers[name].path in cset)
            }
            if not inputs:
                why = f"{ep} drops a cluster that has no inputs"
        if why is None:
            kept.append(cl)
        else:
            for p in cl:
                released[p] = why
    return kept, released


def _merge_small_clusters(
    clusters: list[list[str]],
    preds: Mapping[str, list[str]],
    succs: Mapping[str, list[str]],
    min_nodes: int,
    order: list[str],
) -> list[list[str]]:
    """A cluster below the minimum joins the first later cluster in ORT's order that it has
    an edge with; one pass, in order, as OpenVINO's GetCapability walks its clusters.

    Measured with onnxruntime-openvino 1.24.1 (profile note): Relu -> {NonZero, Sigmoid, Cast}
    with NonZero and Cast refused keeps Relu + Sigmoid as one cluster although the
    topological cut leaves them in two single-node runs. A small cluster with an edge only
    to earlier clusters is not merged (OLMo2's
    ``Add(h, RMSNormalization(MatMul(h)))`` after a cluster that computes ``h`` goes back to
    CPU); joining the next cluster happens even when it makes the fused graph cyclic (OL510).
    """
    if min_nodes <= 1:
        return clusters
    out = [list(c) for c in clusters]
    merged: set[int] = set()
    for i in range(len(out) - 1):
        cl = out[i]
        if len(cl) >= min_nodes:
            continue
        linked = {x for p in cl for x in (*preds[p], *succs[p])} - set(cl)
        j = next((j for j in range(i + 1, len(out)) if linked & set(out[j])), None)
        if j is not None:
            out[j] = sorted(out[j] + cl, key=order.index)
            merged.add(i)
    return [cl for i, cl in enumerate(out) if i not in merged]


def dequantized_type(n: NodeRef, slot: int, dtypes: Mapping[str, str | None]) -> str | None:
    """The element type the DQ feeding input ``slot`` of the unit target ``n``
    dequantizes (None where no DQ feeds it): every DQ that feeds a unit's target is a
    member of its unit, as itself or as ORT's copy (:func:`qdq_units`)."""
    if slot >= len(n.inputs) or not n.inputs[slot]:
        return None
    dq = n.graph.producers.get(n.inputs[slot])
    if dq is None or dq.op_type != "DequantizeLinear" or not dq.inputs:
        return None
    return dtypes.get(dq.inputs[0])

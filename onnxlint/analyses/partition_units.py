"""Node units and grouping: the QDQ units ORT's selectors form (one unit is placed whole),
the greedy topological grouping of ORT's shared partitioning utility, and OpenVINO's
clustering."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import onnx

from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.ep_names import short_ep
from onnxlint.index import GraphRef, NodeRef, node_edges
from onnxlint.tensors import inline_array, is_external

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
    :func:`_original_dq_owners`): a DQ shared by several readers is a unit DQ of each of
    them. The copies are not nodes of the model; a unit lists the original DQ only
    where ORT left it to that input.

    ``selectors``: the EP's own selectors (:class:`QdqSelector`), which replace the rules
    above (:func:`_selected_units`).
    """
    if selectors:
        return _selected_units(g, nodes, dtypes or {}, selectors)
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
                owners[p.path] = _original_dq_owner(g, p, paths, outputs)
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


#: the domains whose nodes the EP's selectors look at (ONNX, Microsoft's, ORT's NHWC)
_SELECTOR_DOMAINS = frozenset({"ai.onnx", "com.microsoft", "com.ms.internal.nhwc"})
_CLIPS = frozenset({"Relu", "Clip"})


def _selected_units(
    g: GraphRef,
    nodes: Sequence[NodeRef],
    dtypes: Mapping[str, str | None],
    selectors: Sequence[QdqSelector],
) -> dict[str, list[str]]:
    """:func:`qdq_units` by the EP's own selectors (onnxruntime-qnn's copy of ORT's, in
    its qnn_ep_utils.cc): the DQs are every input a DequantizeLinear feeds (ORT's copies
    included); a Relu or Clip that alone reads the node's only output (and is read once,
    not a graph output) is found first, and the Qs are read after it; then the node's
    selector checks the counts, the Q side and the types."""
    by_op = {op: sel for sel in selectors for op in sel.ops}
    paths = {n.path for n in nodes}
    outputs = set(g.outputs)
    units: dict[str, list[str]] = {}
    taken: set[str] = set()
    owners: dict[str, tuple[str, int] | None] = {}

    def readers(name: str) -> list[NodeRef]:
        return [c for c in g.consumers.get(name, []) if c.path in paths and name in c.inputs]

    for n in nodes:
        sel = by_op.get(n.op_type)
        if sel is None or n.domain not in _SELECTOR_DOMAINS:
            continue
        if sel.since_versions and n.since_version not in sel.since_versions:
            continue
        dq_nodes: list[NodeRef] = []
        originals: list[NodeRef] = []
        for slot, name in enumerate(n.inputs):
            p = g.producers.get(name) if name else None
            if p is None or p.path not in paths or p.op_type != "DequantizeLinear":
                continue
            dq_nodes.append(p)
            if p.path not in owners:
                owners[p.path] = _original_dq_owner(g, p, paths, outputs)
            if owners[p.path] == (n.path, slot):
                originals.append(p)
        if not dq_nodes or not _dq_count_ok(sel.dq_inputs, len(dq_nodes), len(n.inputs)):
            continue
        clip = _redundant_clip(g, n, outputs, readers, dtypes)
        if clip is not None and not sel.clip:
            continue
        last = clip or n
        qs = [c for name in last.outputs if name for c in readers(name)]
        qs = [c for c in qs if c.op_type == "QuantizeLinear"]
        if sel.check_q and not _q_side_ok(n, qs, sel, outputs, readers):
            continue
        if sel.data_dq and qs and (not dq_nodes or n.inputs[0] not in dq_nodes[0].outputs):
            continue
        if not _types_ok(sel, n, dq_nodes, qs, dtypes):
            continue
        if sel.same_scale and qs and not _same_scale(g, qs[0], dq_nodes[0]):
            continue
        qs = [q for q in qs if q.path not in taken]
        members = [d.path for d in originals] + [n.path]
        members += [clip.path] if clip is not None else []
        members += [q.path for q in qs]
        units[n.path] = members
        taken.update(members)
    return units


def _dq_count_ok(rule: str, count: int, slots: int) -> bool:
    if rule == "all":
        return count == slots
    low, _, high = rule.partition("-")
    return int(low) <= count <= int(high or low)


def _redundant_clip(
    g: GraphRef,
    n: NodeRef,
    outputs: set[str],
    readers: Callable[[str], list[NodeRef]],
    dtypes: Mapping[str, str | None],
) -> NodeRef | None:
    """The Relu or Clip that alone reads ``n``'s only output, is read once, by a
    QuantizeLinear whose range it does not narrow (ORT's IsClipMadeRedundantByQ: the
    Q's lowest and highest values lie within the clip's bounds), and writes no graph
    output; None where there is none (a bound or a Q parameter that is not a known
    constant counts as narrowing)."""
    if len(n.outputs) != 1 or not n.outputs[0]:
        return None
    after = readers(n.outputs[0])
    if len(after) != 1 or after[0].op_type not in _CLIPS or len(after[0].outputs) != 1:
        return None
    clip = after[0]
    out = clip.outputs[0]
    if not out or out in outputs:
        return None
    read_by = readers(out)
    if len(read_by) != 1 or read_by[0].op_type != "QuantizeLinear":
        return None
    q_range = _q_range(g, read_by[0], dtypes)
    if q_range is None:
        return None
    low, high = _clip_bounds(g, clip)
    if low is None or high is None:
        return None
    return clip if low <= q_range[0] and q_range[1] <= high else None


#: the integer range of each quantized type
_Q_LIMITS = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
}


def _q_range(
    g: GraphRef, q: NodeRef, dtypes: Mapping[str, str | None]
) -> tuple[float, float] | None:
    """The real values a QuantizeLinear with scalar constant parameters can represent."""
    limits = _Q_LIMITS.get(dtypes.get(q.outputs[0]) or "") if q.outputs else None
    if limits is None or len(q.inputs) < 3:
        return None
    scale = _scalar_value(g, q.inputs[1])
    zero = _scalar_value(g, q.inputs[2])
    if scale is None or zero is None:
        return None
    return ((limits[0] - zero) * scale, (limits[1] - zero) * scale)


def _clip_bounds(g: GraphRef, clip: NodeRef) -> tuple[float | None, float | None]:
    """A Relu's or Clip's bounds (infinite where absent; None where not a known constant)."""
    inf = float("inf")
    if clip.op_type == "Relu":
        return 0.0, inf
    attrs = {a.name: a.f for a in clip.node.attribute if a.type == onnx.AttributeProto.FLOAT}
    if attrs or len(clip.inputs) < 2:  # Clip before opset 11: bounds as attributes
        return attrs.get("min", -inf), attrs.get("max", inf)
    bounds: list[float | None] = []
    for slot, default in ((1, -inf), (2, inf)):
        name = clip.inputs[slot] if slot < len(clip.inputs) else ""
        bounds.append(_scalar_value(g, name) if name else default)
    return bounds[0], bounds[1]


def _scalar_value(g: GraphRef, name: str) -> float | None:
    t = _constant_tensor(g, name)
    values = inline_array(t, max_elements=1) if t is not None else None
    if values is None or values.size != 1 or values.dtype.kind not in "iuf":
        return None
    return float(values.reshape(-1)[0])


def _q_side_ok(
    n: NodeRef,
    qs: Sequence[NodeRef],
    sel: QdqSelector,
    outputs: set[str],
    readers: Callable[[str], list[NodeRef]],
) -> bool:
    """ORT's CheckQDQNodes on the Q side: one QuantizeLinear per output slot, every reader
    of the node's outputs one of them, no graph output (or no Q at all, ``empty_q``)."""
    if not qs:
        return sel.empty_q and not sel.needs_q
    total = sum(len(readers(name)) for name in n.outputs if name)
    return len(n.outputs) == len(qs) == total and not any(name in outputs for name in n.outputs)


def _types_ok(
    sel: QdqSelector,
    n: NodeRef,
    dq_nodes: Sequence[NodeRef],
    qs: Sequence[NodeRef],
    dtypes: Mapping[str, str | None],
) -> bool:
    """The selector's type checks; a type that is not known never refuses."""
    d = [dtypes.get(x.inputs[0]) if x.inputs else None for x in dq_nodes]
    q = [dtypes.get(x.outputs[0]) if x.outputs else None for x in qs]
    for group in sel.same_types:
        seen: set[str] = set()
        for ref in group:
            values = d if ref[0] == "d" else q
            picked = values if ref[1:] == "*" else values[int(ref[1:]) : int(ref[1:]) + 1]
            seen.update(t for t in picked if t is not None)
        if len(seen) > 1:
            return False
    bias = d[2] if sel.int32_bias and len(d) > 2 else None
    return bias is None or bias == "int32"


def _same_scale(g: GraphRef, q: NodeRef, dq: NodeRef) -> bool:
    """Whether the Q and the DQ have one scale: one tensor, or equal constants (ORT's
    IsQDQPairSupported); a scale whose value is out of reach (external data) counts as
    equal, a computed one as different."""
    if len(q.inputs) < 2 or len(dq.inputs) < 2:
        return False
    a, b = q.inputs[1], dq.inputs[1]
    if a == b:
        return True
    ta, tb = _constant_tensor(g, a), _constant_tensor(g, b)
    if ta is None or tb is None:
        return False
    if is_external(ta) or is_external(tb):
        return True  # never opened: counted as equal
    if ta.data_type != tb.data_type:
        return False
    va, vb = inline_array(ta, max_elements=64), inline_array(tb, max_elements=64)
    # a damaged or large tensor: ORT would not match it either
    return va is not None and vb is not None and va.tolist() == vb.tolist()


def _constant_tensor(g: GraphRef, name: str) -> onnx.TensorProto | None:
    cur: GraphRef | None = g
    while cur is not None:
        t = cur.initializers.get(name)
        if t is not None:
            return t
        p = cur.producers.get(name)
        if p is not None:
            if p.op_type == "Constant":
                for a in p.node.attribute:
                    if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                        return a.t
            return None
        cur = cur.outer
    return None


def _original_dq_owner(
    g: GraphRef, dq: NodeRef, paths: set[str], outputs: set[str]
) -> tuple[str, int] | None:
    """The (node path, input slot) that keeps ``dq`` itself after ORT's
    ``EnsureUniqueDQForNodeUnit`` (onnxruntime/core/optimizer/qdq_transformer/
    ensure_unique_dq_for_node_unit.cc): each further reading input gets a copy
    (``<name>/duplicated``). The first reading input keeps the original, in ORT's edge
    order (the reader's node index, then the input slot), unless the DQ also writes a
    graph output or a subgraph reads it: then every reading input gets a copy (None)."""
    if not dq.outputs or not dq.outputs[0]:
        return None
    value = dq.outputs[0]
    if value in outputs:
        return None
    first: tuple[int, int, str] | None = None
    for c in g.consumers.get(value, []):
        if c.path not in paths:
            continue
        slots = [i for i, name in enumerate(c.inputs) if name == value]
        if not slots:
            return None  # a subgraph of ``c`` reads it (an implicit input)
        edge = (c.index, slots[0], c.path)
        if first is None or edge < first:
            first = edge
    return (first[2], first[1]) if first is not None else None


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


def unit_graph(
    g: GraphRef,
    order: Sequence[NodeRef],
    units: Mapping[str, list[str]] | None = None,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
) -> UnitGraph:
    """The :class:`UnitGraph` of ``g`` (``order`` its topological order) for ``units``."""
    preds, succs = edges or node_edges(g, order)
    if not units:
        # each node its own unit: the node edges are the unit edges (``node_edges`` keeps no
        # edge from a node to itself), the successor lists read as they are
        paths = [n.path for n in order]
        degrees = {p: len(preds[p]) for p in paths}
        return UnitGraph({}, degrees, succs, [p for p in paths if not degrees[p]])
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
    for u, members in members_of.items():
        mset = set(members)
        in_degree[u] = sum(1 for m in members for p in preds[m] if p not in mset)
        out_edges[u] = [unit_of[s] for m in members for s in succs[m] if s not in mset]
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
    return UnitGraph(several, in_degree, out_edges, roots)


def greedy_groups(
    g: GraphRef,
    order: Sequence[NodeRef],
    supported: set[str],
    units: Mapping[str, list[str]] | None = None,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
    prepared: UnitGraph | None = None,
) -> list[list[str]]:
    """ORT's greedy partition node groups (a wave per group over a Kahn topological sweep).

    ``order`` is the graph's topological order; ``supported`` the node paths
    the EP may take; ``units`` maps a unit's target node to its members; ``prepared``:
    the :func:`unit_graph` of these (then ``units`` and ``edges`` are not read), which the
    sweep does not change.
    """
    ug = prepared if prepared is not None else unit_graph(g, order, units, edges)
    members_of, out_edges = ug.members_of, ug.out_edges
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
        for d in out_edges[u]:
            if ok:
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
    """A cluster below the minimum joins the next cluster it has an edge with (else an earlier one).

    Measured with onnxruntime-openvino 1.24.1 (profile note): Relu -> {NonZero, Sigmoid, Cast}
    with NonZero and Cast refused keeps Relu + Sigmoid as one cluster although the
    topological cut leaves them in two single-node runs.
    """
    if min_nodes <= 1:
        return clusters
    out = [list(c) for c in clusters]
    changed = True
    while changed:
        changed = False
        for i, cl in enumerate(out):
            if len(cl) >= min_nodes:
                continue
            mine = set(cl)
            linked = {x for p in cl for x in (*preds[p], *succs[p])} - mine
            targets = [j for j in range(len(out)) if j != i and linked & set(out[j])]
            if not targets:
                continue
            j = next((t for t in targets if t > i), targets[0])
            out[j] = sorted(out[j] + cl, key=order.index)
            del out[i]
            changed = True
            break
    return out


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

"""QDQ node units by an EP's own node-group selectors (``partitioning.qdq_selectors``:
onnxruntime-qnn's copy of ORT's, in its qnn_ep_utils.cc), and which reader of a shared
DequantizeLinear keeps it once ORT gives every reader its own copy
(``EnsureUniqueDQForNodeUnit``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import onnx

from onnxlint.analyses.constants import constant_array, constant_tensor, scalar_constant
from onnxlint.index import GraphRef, NodeRef
from onnxlint.tensors import inline_array, is_external

if TYPE_CHECKING:
    from onnxlint.profiles.model import QdqSelector


#: the domains whose nodes the EP's selectors look at (ONNX, Microsoft's, ORT's NHWC)
_SELECTOR_DOMAINS = frozenset({"ai.onnx", "com.microsoft", "com.ms.internal.nhwc"})
_CLIPS = frozenset({"Relu", "Clip"})


def selected_units(
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
                owners[p.path] = original_dq_owner(g, p, paths, outputs)
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
    Q's lowest and highest values lie within the clip's bounds; for a Relu, every zero
    point is the type's lowest value), and writes no graph output; None where there is
    none (a bound or a Q parameter that is not a known constant counts as narrowing)."""
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
    if clip.op_type == "Relu":
        return clip if _zero_points_at_minimum(g, read_by[0], dtypes) else None
    q_range = _q_range(g, read_by[0], dtypes)
    if q_range is None:
        return None
    low, high = _clip_bounds(g, clip)
    if low is None or high is None:
        return None
    return clip if low <= q_range[0] and q_range[1] <= high else None


#: the integer range of each quantized type a QuantizeLinear writes
Q_LIMITS = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
}


def _q_limits(q: NodeRef, dtypes: Mapping[str, str | None]) -> tuple[int, int] | None:
    """The integer range of the type a QuantizeLinear writes (None: not a quantized type)."""
    return Q_LIMITS.get(dtypes.get(q.outputs[0]) or "") if q.outputs else None


def _q_range(
    g: GraphRef, q: NodeRef, dtypes: Mapping[str, str | None]
) -> tuple[float, float] | None:
    """The real values a QuantizeLinear with scalar constant parameters can represent."""
    limits = _q_limits(q, dtypes)
    if limits is None or len(q.inputs) < 3:
        return None
    scale = scalar_constant(g, q.inputs[1], outer=True)
    zero = scalar_constant(g, q.inputs[2], outer=True)
    if scale is None or zero is None:
        return None
    return ((limits[0] - zero) * scale, (limits[1] - zero) * scale)


def _zero_points_at_minimum(g: GraphRef, q: NodeRef, dtypes: Mapping[str, str | None]) -> bool:
    """Whether every zero point of a QuantizeLinear is its type's lowest value, so that
    it clips at zero as a Relu does (ORT's IsClipMadeRedundantByQ for a Relu). QNN takes a
    per-channel zero point too when each element is that value (measured: a Conv -> Relu ->
    QuantizeLinear with 8 uint8 zero points of 0 is one unit, of 7 it is not); a Q without
    a zero point input is not (measured)."""
    limits = _q_limits(q, dtypes)
    if limits is None or len(q.inputs) < 3 or not q.inputs[2]:
        return False
    zero = constant_array(g, q.inputs[2], outer=True)
    return zero is not None and zero.size > 0 and bool((zero == limits[0]).all())


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
        bounds.append(scalar_constant(g, name, outer=True) if name else default)
    return bounds[0], bounds[1]


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
    ta, tb = constant_tensor(g, a, outer=True), constant_tensor(g, b, outer=True)
    if ta is None or tb is None:
        return False
    if is_external(ta) or is_external(tb):
        return True  # never opened: counted as equal
    if ta.data_type != tb.data_type:
        return False
    va, vb = inline_array(ta, max_elements=64), inline_array(tb, max_elements=64)
    # a damaged or large tensor: ORT would not match it either
    return va is not None and vb is not None and va.tolist() == vb.tolist()


def original_dq_owner(
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

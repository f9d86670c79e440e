"""EP quirks that release claimed nodes or fail a session, and the reasons they give:
QDQ units an EP refuses, groups it will not keep, ORT's layout transform refusing a node,
partitions that fail to compile (chains, boundary tensors) or depend only on constants."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from onnxlint.analyses.chain_links import chain_from, per_axis_scale, per_axis_zero_points
from onnxlint.analyses.layout_conditions import channel_mismatch, reshaped_unit_input
from onnxlint.analyses.layout_outputs import (
    layout_sensitive_ops,
    pushed_through_ops,
    reductions_keeping_dims,
)
from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.partition_plan import PartitionPlan
from onnxlint.analyses.partition_units import dequantized_type
from onnxlint.ep_names import short_ep
from onnxlint.index import GraphRef, NodeRef

if TYPE_CHECKING:
    from onnxlint.profiles import Profile
    from onnxlint.profiles.model import LayoutPassFailure


def tensor_dtypes(la: LevelAssignment, order: Sequence[NodeRef]) -> dict[str, str | None]:
    """Element type of every tensor the nodes of ``order`` read or write, from their facts."""
    out: dict[str, str | None] = {}
    for n in order:
        na = la.get(n.path)
        if na is None:
            continue
        for names, types in (
            (n.inputs, na.facts.input_dtypes),
            (n.outputs, na.facts.output_dtypes),
        ):
            for name, t in zip(names, types, strict=False):
                if name and t is not None:
                    out.setdefault(name, t)
    return out


def refused_units(
    units: Mapping[str, list[str]],
    by_path: Mapping[str, NodeRef],
    dtypes: Mapping[str, str | None],
    profile: Profile,
    la: LevelAssignment | None = None,
) -> dict[str, str]:
    """Unit target -> why the profile's ``refused_qdq_units`` refuse its whole unit
    (``la`` gives the scale shapes that ``per_axis_scale`` rules need)."""
    rules = profile.partitioning.refused_qdq_units
    out: dict[str, str] = {}
    if not rules:
        return out
    for target in units:
        n = by_path.get(target)
        if n is None:
            continue
        for rule in rules:
            if rule.op != n.op_type or not all(
                dequantized_type(n, slot, dtypes) in types
                for slot, types in rule.input_types.items()
            ):
                continue
            if rule.per_axis_scale and not per_axis_scale(la, n):
                continue
            if rule.per_axis_zero_points is not None:
                slot, wanted = rule.per_axis_zero_points
                zps = per_axis_zero_points(la, n, slot)
                want = wanted.get(dequantized_type(n, slot, dtypes) or "")
                if zps is None or want is None or zps == {want}:
                    continue
            types_shown = ""
            if rule.accepted_types:
                seen = _unit_types(n, dtypes)
                if any(
                    # an unknown type never refuses on its own
                    all(slot not in seen or seen[slot] in types for slot, types in row.items())
                    for row in rule.accepted_types
                ):
                    continue
                named = {slot for row in rule.accepted_types for slot in row}
                shown = ", ".join(f"input {i}: {t}" for i, t in sorted(seen.items()) if i in named)
                types_shown = f" ({shown})"
            out[target] = (
                f"{short_ep(profile.ep)} refuses this QDQ {n.op_type} unit{types_shown}: "
                f"{rule.reason}"
            )
            break
    return out


def _unit_types(n: NodeRef, dtypes: Mapping[str, str | None]) -> dict[int, str]:
    """Per input slot of a unit's target: the type its DQ dequantizes, or the tensor's
    own element type where no DQ feeds it (unknown types left out). The target of a lone
    Q/DQ unit reads its inputs' own types: no DQ of a unit feeds it."""
    out: dict[int, str] = {}
    lone = n.op_type in ("QuantizeLinear", "DequantizeLinear")
    for slot, name in enumerate(n.inputs):
        if not name:
            continue
        dq = n.graph.producers.get(name)
        fed_by_dq = not lone and dq is not None and dq.op_type == "DequantizeLinear"
        t = dequantized_type(n, slot, dtypes) if fed_by_dq else dtypes.get(name)
        if t is not None:
            out[slot] = t
    return out


def unit_types_match(
    n: NodeRef, rows: Sequence[Mapping[int, frozenset[str]]], dtypes: Mapping[str, str | None]
) -> str | None:
    """The types of the QDQ unit ``n`` targets when a row of ``rows`` (per input slot, the
    types its DequantizeLinear may dequantize) matches them; an unknown type never does."""
    seen = {
        slot: t
        for slot in range(len(n.inputs))
        if (t := dequantized_type(n, slot, dtypes)) is not None
    }
    for row in rows:
        if all(seen.get(slot) in types for slot, types in row.items()):
            shown = ", ".join(f"input {i}: {seen[i]}" for i in sorted(row))
            return f"its DequantizeLinears give {shown}"
    return None


def layout_pass_failures(
    kept: set[str],
    units: Mapping[str, list[str]],
    by_path: Mapping[str, NodeRef],
    la: LevelAssignment,
    profile: Profile,
) -> dict[str, str]:
    """Node path -> why the EP refuses the claimed node after ORT's layout transform.

    The profile's ``partitioning.layout_pass_failures`` name the layout-sensitive ops the
    EP takes in its first capability pass without validating them; a node that meets one
    of their conditions is refused when the EP sees it again in its own layout, and
    session creation fails (no EP is left for the rewritten node).
    """
    rules = profile.partitioning.layout_pass_failures
    out: dict[str, str] = {}
    if not rules:
        return out
    dtypes: Mapping[str, str | None] = {}
    if any(rule.condition == "qdq_unit_types" for rule in rules):
        dtypes = tensor_dtypes(la, [by_path[p] for p in kept])
    for path in kept:
        n = by_path[path]
        for rule in rules:
            if rule.op != n.op_type:
                continue
            problem = _layout_problem(rule, n, units.get(path), la, dtypes)
            if problem is not None:
                out[path] = (
                    f"{short_ep(profile.ep)} takes this {n.op_type} before ORT rewrites it to "
                    f"{profile.layout} and refuses it afterwards ({problem}): {rule.reason}"
                )
                break
    return out


def _layout_problem(
    rule: LayoutPassFailure,
    n: NodeRef,
    unit: Sequence[str] | None,
    la: LevelAssignment,
    dtypes: Mapping[str, str | None],
) -> str | None:
    """What about ``n`` meets ``rule``'s condition; None when it does not."""
    if rule.condition == "zero_sized_output":
        na = la.get(n.path)
        for i, shape in enumerate(na.facts.output_shapes if na is not None else ()):
            if shape is not None and 0 in shape:
                return f"output {i} has a zero-sized dimension {list(shape)}"
        return None
    if rule.condition == "computed_bias_in_qdq_unit" and unit is not None:
        slot = rule.slot if rule.slot is not None else 2
        if slot >= len(n.inputs) or not n.inputs[slot]:
            return None
        prod = n.graph.producers.get(n.inputs[slot])
        if prod is None or prod.path in unit or prod.op_type == "DequantizeLinear":
            return None
        return f"input {slot} of this QDQ unit is computed by {prod.op_type} {prod.label}"
    if rule.condition == "channel_mismatch":
        return channel_mismatch(n, la)
    if rule.condition == "reshaped_input_in_qdq_unit" and unit is not None:
        return reshaped_unit_input(n, unit, rule.slot or 0)
    if rule.condition == "qdq_unit_types" and unit is not None:
        return unit_types_match(n, rule.unit_types, dtypes)
    if rule.condition == "integer_input":
        slot = rule.slot or 0
        na = la.get(n.path)
        inputs = na.facts.input_dtypes if na is not None else ()
        dtype = inputs[slot] if slot < len(inputs) else None
        if dtype is not None and dtype.startswith(("int", "uint")):
            return f"input {slot} is {dtype}"
    return None


def finalize_failures(
    g: GraphRef,
    group: Sequence[str],
    by_path: Mapping[str, NodeRef],
    profile: Profile,
    la: LevelAssignment | None = None,
) -> dict[str, str]:
    """First node path of each chain of ``partitioning.finalize_failures`` found inside one
    partition ``group`` -> why the EP fails to compile that partition."""
    rules = profile.partitioning.finalize_failures
    out: dict[str, str] = {}
    if not rules:
        return out
    members = set(group)
    # a branch the EP compiles with its If is part of the If's partition
    compiled = set(profile.partitioning.bodies_compiled_with_node)
    bodies = [b for p in group if by_path[p].op_type in compiled for b in _body_nodes(by_path[p])]
    members.update(b.path for b in bodies)
    # (only the links that follow values across it look inside: the others were measured
    # on a graph's own partitions)
    across = [r for r in rules if r.chain[0].coords_unresolved]
    for n in [*(by_path[p] for p in group), *bodies]:
        path = n.path
        inside = path not in by_path
        for rule in across if inside else rules:
            found = chain_from(n.graph if inside else g, n, rule.chain, members, la)
            if found is not None:
                ops = " -> ".join(m.op_type for m in found)
                what = f"the chain {ops} from {n.label}" if len(found) > 1 else n.label
                out[path] = (
                    f"{short_ep(profile.ep)} fails to compile a partition holding {what}: "
                    f"{rule.reason}"
                )
                break
    return out


def _body_nodes(n: NodeRef) -> list[NodeRef]:
    """Every node of ``n``'s bodies, nested bodies included."""
    out: list[NodeRef] = []
    for body in n.subgraphs.values():
        for m in body.nodes:
            out.append(m)
            out.extend(_body_nodes(m))
    return out


def empty_input_failures(
    group: Sequence[str], by_path: Mapping[str, NodeRef], la: LevelAssignment, profile: Profile
) -> dict[str, str]:
    """Node path -> why the EP fails to build a node of partition ``group`` that reads a
    computed tensor (not a constant) with a zero-sized dimension
    (``partitioning.empty_input_failure``)."""
    rule = profile.partitioning.empty_input_failure
    out: dict[str, str] = {}
    if rule is None:
        return out
    if rule.first_input_reason is not None:
        first = _first_empty_input(group, by_path, la, rule.except_ops)
        if first is not None:
            path, name = first
            out[path] = (
                f"`{name}`, the first input of {short_ep(profile.ep)}'s partition holding "
                f"{by_path[path].label}, has a zero-sized dimension: {rule.first_input_reason}"
            )
    for path in group:
        n = by_path[path]
        na = la.get(path)
        if na is None or n.op_type in rule.except_ops:
            continue
        constant = na.facts.constant_inputs
        for i, shape in enumerate(na.facts.input_shapes):
            # an empty constant (Resize's unused roi, a placeholder) is no tensor QNN builds
            if shape is not None and 0 in shape and i not in constant:
                out[path] = f"input {i} of {n.label} has a zero-sized dimension: {rule.reason}"
                break
    return out


def _first_empty_input(
    group: Sequence[str],
    by_path: Mapping[str, NodeRef],
    la: LevelAssignment,
    skipping: frozenset[str],
) -> tuple[str, str] | None:
    """(path of its first reader, name) of the first input of partition ``group`` in ORT's
    order (the nodes in graph order, each one's inputs by slot; initializers and Constant
    outputs are no inputs) when that input has a zero-sized dimension and only ``skipping``
    ops of the group read it."""
    nodes = sorted((by_path[p] for p in group), key=lambda n: n.index)
    made = {o for n in nodes for o in n.outputs if o}
    for n in nodes:
        g = n.graph
        for i, name in enumerate(n.inputs):
            if not name or name in made or name in g.initializers:
                continue
            producer = g.producers.get(name)
            if producer is not None and producer.op_type == "Constant":
                continue
            na = la.get(n.path)
            shapes = na.facts.input_shapes if na is not None else ()
            shape = shapes[i] if i < len(shapes) else None
            if shape is None or 0 not in shape:
                return None
            readers = [m for m in nodes if name in m.inputs]
            if all(m.op_type in skipping for m in readers):
                return n.path, name
            return None
    return None


def unfusable_group(
    groups: Sequence[list[str]], edges: tuple[dict[str, list[str]], dict[str, list[str]]]
) -> str | None:
    """The first node of a group that a path leaving the group re-enters, over all edges
    (captured values included); None when every group can be fused."""
    _preds, succs = edges
    for grp in groups:
        members = set(grp)
        stack = [s for m in grp for s in succs.get(m, []) if s not in members]
        seen: set[str] = set()
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            for s in succs.get(x, []):
                if s in members:
                    return s
                stack.append(s)
    return None


def keep_group(group: list[str], by_path: Mapping[str, NodeRef], profile: Profile) -> str | None:
    """None to keep a greedy group, else why the EP's on-group-closed check drops it."""
    part = profile.partitioning
    ep = short_ep(profile.ep)
    if len(group) == 1 and by_path[group[0]].op_type in part.drop_single_op_partitions:
        return f"{ep} drops a partition that is a single {by_path[group[0]].op_type}"
    if len(group) < part.min_partition_nodes:
        return f"{ep} drops partitions of fewer than {part.min_partition_nodes} nodes"
    return None


def boundary_failures(plan: PartitionPlan, la: LevelAssignment) -> None:
    """Mark the node at each boundary tensor of a partition that the EP's
    ``partitioning.boundary_tensor_failures`` say it fails to compile (in
    ``plan.finalize_failures``: the consumer of an entering tensor, the producer of a
    leaving one; for "through", the producer of a leaving tensor that reads an entering
    one)."""
    rules = {p.ep: p.partitioning.boundary_tensor_failures for p in la.profiles}
    graphs = {g.path: g for g in la.graph.graphs()}
    for part in plan.partitions:
        g = graphs.get(part.graph)
        if not rules.get(part.ep) or g is None:
            continue
        members = set(part.nodes)
        entering = set(part.inputs)
        for side, names in (("input", part.inputs), ("output", part.outputs)):
            for name in names:
                node = _boundary_node(g, name, side, members)
                if node is None:
                    continue
                directions = [side]
                if (
                    side == "output"
                    and entering.intersection(node.inputs)
                    and not _shape_read_only(g, name, members)
                ):
                    directions.append("through")
                vt = la.graph.value_type(g, name)
                rule = next(
                    (
                        r
                        for direction in directions
                        for r in rules[part.ep]
                        if r.direction == direction
                        and r.dtype == vt.dtype
                        and (r.op is None or r.op == node.op_type)
                        and (r.rank is None or (vt.shape is not None and len(vt.shape) == r.rank))
                    ),
                    None,
                )
                if rule is None:
                    continue
                rank = f", rank {rule.rank}" if rule.rank is not None else ""
                moves = {
                    "input": "receives",
                    "output": "produces",
                    "through": f"passes through its {node.op_type}, which produces",
                }[rule.direction]
                plan.finalize_failures.setdefault(
                    node.path,
                    f"{short_ep(part.ep)} fails to compile partition {part.id}, which "
                    f"{moves} {name!r} ({vt.dtype}{rank}) at its boundary: {rule.reason}",
                )


def _shape_read_only(g: GraphRef, name: str, members: set[str]) -> bool:
    """Whether tensor ``name`` leaves the partition only for ``Shape`` nodes: ORT's
    transpose optimizer rewrites ``Shape(Transpose(x))`` as a ``Gather`` of ``Shape(x)``
    (measured with QNN's layout pass, optimizations disabled), so nothing outside reads
    the tensor itself (the held-out XLNet's int64 ``Transpose`` of its input ids)."""
    if name in g.outputs:
        return False
    outside = [c for c in g.consumers.get(name, []) if c.path not in members]
    return bool(outside) and all(c.op_type == "Shape" for c in outside)


def _boundary_node(g: GraphRef, name: str, direction: str, members: set[str]) -> NodeRef | None:
    """The partition's node that reads (``input``) or writes (``output``) tensor ``name``."""
    if direction == "output":
        p = g.producers.get(name)
        return p if p is not None and p.path in members else None
    return next((c for c in g.consumers.get(name, []) if c.path in members), None)


def constant_only(plan: PartitionPlan, la: LevelAssignment) -> None:
    """Partitions of EPs that fail on a partition fed only by constants ("zero graph inputs")."""
    fails = {p.ep for p in la.profiles if p.partitioning.constant_only_partition_fails}
    for part in plan.partitions:
        if part.ep in fails and not part.inputs:
            part.fails = (
                f"{short_ep(part.ep)} claims a partition that depends only on constants; "
                "session creation fails with 'zero graph inputs'"
            )


def layout_gather_crashes(
    kept: set[str], by_path: Mapping[str, NodeRef], la: LevelAssignment, profile: Profile
) -> dict[str, str]:
    """Node path -> why ORT's layout pass for the EP aborts the process on this Gather of
    ``kept`` (the EP's first-pass nodes of one graph): its data has rank 1, its indices
    rank 2 or more, its data a Reshape of a value the layout Transpose after a kept
    layout-sensitive node reaches (through ops it is pushed through), and it feeds a kept
    Transpose (``partitioning.layout_gather_crash``)."""
    rule = profile.partitioning.layout_gather_crash
    out: dict[str, str] = {}
    if rule is None:
        return out
    layout = layout_sensitive_ops()
    for path in sorted(kept):
        n = by_path[path]
        na = la.get(path)
        if n.op_type != "Gather" or na is None or len(na.facts.input_shapes) < 2:
            continue
        data, indices = na.facts.input_shapes[:2]
        if data is None or indices is None or len(data) != 1 or len(indices) < 2:
            continue
        reshape = _pushed_from(n.inputs[0], n.graph, lambda p: p.op_type == "Reshape")
        before = reshape and _pushed_from(
            reshape.inputs[0], n.graph, lambda p: p.op_type in layout and p.path in kept
        )
        after = before and _transpose_below(n, kept)
        if before and after:
            out[path] = (
                f"{n.label} gathers rank-{len(indices)} indices from a Reshape to rank 1 of "
                f"what {before.op_type} {before.label} writes (which ORT converts to "
                f"{profile.layout} for {short_ep(profile.ep)}) and feeds Transpose "
                f"{after.label}: {rule.reason}"
            )
    return out


def _pushed_from(name: str, g: GraphRef, found: Callable[[NodeRef], bool]) -> NodeRef | None:
    """The first producer above value ``name`` that is ``found``, through the ops a pending
    layout Transpose is pushed through (reductions only when they keep their dims); None
    when another op comes first."""
    pushed = pushed_through_ops()
    reductions = reductions_keeping_dims()
    seen: set[str] = set()
    todo = [name]
    while todo:
        p = g.producers.get(todo.pop())
        if p is None or p.path in seen:
            continue
        seen.add(p.path)
        if found(p):
            return p
        keepdims = p.attr("keepdims")
        if p.op_type in pushed or (
            p.op_type in reductions and (keepdims is None or keepdims.i != 0)
        ):
            todo.extend(i for i in p.inputs[:1] if i)
    return None


def _transpose_below(start: NodeRef, kept: set[str]) -> NodeRef | None:
    """The first kept Transpose below ``start`` in its graph, through any nodes."""
    g = start.graph
    seen = {start.path}
    todo = [start]
    while todo:
        for c in (c for name in todo.pop().outputs if name for c in g.consumers.get(name, [])):
            if c.path in seen:
                continue
            seen.add(c.path)
            if c.op_type == "Transpose" and c.path in kept:
                return c
            todo.append(c)
    return None

"""What ORT's layout transform for an NHWC EP changes in the dependencies the EP's second
capability pass sees: Reshapes whose run-time shape input the transpose optimizer replaces
by a constant, and the Shape nodes whose new NHWC-to-NCHW Gather is then left feeding
nothing.

ORT (``graph_partitioner.cc``) asks an NHWC EP for its capability, wraps the layout-sensitive
nodes the EP took in Transposes (``layout_transformation.cc``, TransformLayoutForEP), pushes
those Transposes as far as they go (``onnx_transpose_optimization.cc``, OptimizeImpl, with
the aggressive PostLayoutTransformCostCheck) and asks the EP again. Two handlers matter
here:

- ``EPAwareHandleReshape`` (``ort_transpose_optimization.cc``), for Reshapes assigned to
  QNN only: when a channel Transpose reaches a Reshape whose output leads to another
  Transpose, whose input and output shapes are static, whose batch dimension is kept and
  whose channel dimension is kept (first or, in 3-D, last), the Transpose is pushed through
  and the Reshape's shape input is replaced by a new constant. Whatever computed the old
  shape (typically a ``Shape`` QNN refuses) no longer feeds the Reshape, so the EP's groups
  on both sides of it can become one.
- ``HandleShape``: ``Shape(Transpose(x))`` becomes ``Gather(Shape(x), perm)``; the Gather
  (new, claimable) takes the Shape's consumers. When they were all such Reshapes the Gather
  feeds nothing.

The profile says which EP this is (``partitioning.layout_reshape_rewrite``) and which ops
the EP adds to ORT's layout-sensitive list; ORT's own list and the ops a Transpose is
pushed through are ``rules/ort_layout.json``'s (:mod:`~onnxlint.analyses.layout_outputs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from onnxlint.analyses.layout_outputs import layout_sensitive_ops, pushed_through_ops
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.partition_units import UnitGraph, greedy_groups
from onnxlint.index import GraphRef, NodeRef

#: NCHW-to-NHWC perms EPAwareHandleReshape recognises, by rank; both 3-D directions read
#: the same perm, so a 3-D Reshape qualifies keeping either its first or its last channel
_CHANNEL_RANKS = (3, 4)


@dataclass
class LayoutRewrites:
    """The rewrites of one graph: ``dropped`` maps a Reshape to the producer of the shape
    input it no longer reads; ``orphans`` lists the Shape nodes whose Gather is left with
    no consumer, and ``dead`` the nodes that only fed those shape inputs."""

    dropped: dict[str, str] = field(default_factory=dict)
    orphans: list[str] = field(default_factory=list)
    dead: set[str] = field(default_factory=set)
    #: the Gathers ORT writes after Shapes of Transposes (:func:`transpose_shape_gathers`)
    shape_gathers: dict[str, str] = field(default_factory=dict)
    #: each of those Shapes -> the Transpose it no longer reads
    moved: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.dropped or self.shape_gathers)


def layout_rewrites(
    lg: LevelGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    kept: set[str],
    extra_layout_ops: frozenset[str],
) -> LayoutRewrites:
    """The Reshapes whose shape input ORT replaces by a constant once the EP keeps the nodes
    of ``kept`` (its first pass), and the Shape nodes and shape chains that leaves behind."""
    layout_ops = layout_sensitive_ops() | extra_layout_ops
    pushed = pushed_through_ops()
    by_path = {n.path: n for n in order}
    producers = g.producers
    outputs = set(g.outputs)
    out = LayoutRewrites()

    def producer(name: str) -> NodeRef | None:
        p = producers.get(name) if name else None
        return p if p is not None and p.path in by_path else None

    reached: dict[str, bool] = {}

    def transposed(name: str) -> bool:
        """Whether a layout Transpose (NHWC back to NCHW) reaches the value ``name``."""
        if name in reached:
            return reached[name]
        reached[name] = False  # a cycle guard; graphs are acyclic
        p = producer(name)
        got = False
        if p is not None:
            if p.op_type in layout_ops and p.path in kept:
                got = True
            elif p.op_type in pushed:
                got = any(transposed(i) for i in p.inputs if producer(i) is not None)
        reached[name] = got
        return got

    leading: dict[str, bool] = {}

    def leads_to_transpose(name: str) -> bool:
        """Whether ``name`` reaches a Transpose through ops a Transpose is pushed through:
        a Transpose of the model, or the one ORT puts before a kept layout-sensitive op."""
        if name in leading:
            return leading[name]
        leading[name] = False
        got = False
        for c in g.consumers.get(name, []):
            if c.path not in by_path:
                continue
            if c.op_type == "Transpose" or (
                c.op_type in layout_ops and c.path in kept and c.inputs[0] == name
            ):
                got = True
            elif c.op_type in pushed:
                got = any(leads_to_transpose(o) for o in c.outputs if o)
            if got:
                break
        leading[name] = got
        return got

    for n in order:
        if n.op_type != "Reshape" or n.path not in kept or len(n.inputs) < 2:
            continue
        shape_producer = producer(n.inputs[1])
        if shape_producer is None or not n.outputs:
            continue
        if not _channel_reshape(lg, g, n):
            continue
        if transposed(n.inputs[0]) and leads_to_transpose(n.outputs[0]):
            out.dropped[n.path] = shape_producer.path
    if not out.dropped:
        return _with_shape_gathers(out, lg, g, order, by_path)

    # the nodes left computing only the shapes no Reshape reads any more
    dropped_inputs = {(r, by_path[r].inputs[1]) for r in out.dropped}
    dead: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in reversed(order):
            if n.path in dead or (n.path in kept and n.op_type == "Reshape"):
                continue
            if not n.outputs or any(o in outputs for o in n.outputs):
                continue
            uses = [
                (c.path, o)
                for o in n.outputs
                if o
                for c in g.consumers.get(o, [])
                if c.path in by_path
                for i in c.inputs
                if i == o
            ]
            if uses and all(u in dropped_inputs or u[0] in dead for u in uses):
                dead.add(n.path)
                changed = True
    out.dead = dead
    out.orphans = [
        n.path
        for n in order
        if n.op_type == "Shape" and n.path in dead and n.inputs and transposed(n.inputs[0])
    ]
    return _with_shape_gathers(out, lg, g, order, by_path)


def _with_shape_gathers(
    out: LayoutRewrites,
    lg: LevelGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    by_path: Mapping[str, NodeRef],
) -> LayoutRewrites:
    """``out`` with the Gathers of the Shapes of Transposes and the edges they move."""
    if g.depth > 0:
        return out  # ORT's layout transform does not enter control-flow bodies
    out.shape_gathers = transpose_shape_gathers(lg, g, order, out.orphans)
    for shape in out.shape_gathers.values():
        t = g.producers.get(by_path[shape].inputs[0])
        if t is not None:
            out.moved[shape] = t.path
    return out


def _channel_reshape(lg: LevelGraph, g: GraphRef, n: NodeRef) -> bool:
    """Whether a Reshape qualifies for EPAwareHandleReshape: static input and output shapes,
    input rank 3 or 4, the batch dimension kept and the channel dimension (the first after
    the batch, or in 3-D also the last) kept."""
    src = lg.value_type(g, n.inputs[0]).shape
    dst = lg.value_type(g, n.outputs[0]).shape
    if src is None or dst is None or len(src) not in _CHANNEL_RANKS or len(dst) < 2:
        return False
    if not all(type(d) is int and d >= 0 for d in (*src, *dst)):
        return False
    if src[0] != dst[0]:
        return False
    if src[1] == dst[1]:
        return True
    return len(src) == 3 and src[-1] == dst[-1]


def reshape_of(rewrites: LayoutRewrites, shape: str, by_path: Mapping[str, NodeRef]) -> str | None:
    """The first rewritten Reshape whose old shape input ``shape`` computed (directly or
    through nodes left dead)."""
    for reshape, src in rewrites.dropped.items():
        seen: set[str] = set()
        todo = [src]
        while todo:
            cur = todo.pop()
            if cur == shape:
                return reshape
            if cur in seen or cur not in rewrites.dead:
                continue
            seen.add(cur)
            node = by_path[cur]
            todo += [p.path for i in node.inputs if (p := node.graph.producers.get(i)) is not None]
    return None


def orphan_gathers(rewrites: LayoutRewrites) -> Mapping[str, str]:
    """A stand-in id for each orphaned Shape's Gather -> the Shape it reads."""
    return {f"{s}#layout-gather": s for s in rewrites.orphans}


def edges_without(
    edges: tuple[dict[str, list[str]], dict[str, list[str]]], dropped: Mapping[str, str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``edges`` (preds, succs) less one edge from each dropped shape producer to its Reshape;
    the lists of other nodes are shared, not copied."""
    preds, succs = dict(edges[0]), dict(edges[1])
    for reshape, src in dropped.items():
        p = list(preds[reshape])
        if src in p:
            p.remove(src)
        preds[reshape] = p
        s = list(succs[src])
        if reshape in s:
            s.remove(reshape)
        succs[src] = s
    return preds, succs


def with_gathers(ug: UnitGraph, gathers: Mapping[str, str]) -> UnitGraph:
    """``ug`` with one more unit per orphaned Gather, fed by its Shape's unit and feeding
    nothing (the Gather is a node of ORT's rewritten graph, not of the model)."""
    if not gathers:
        return ug
    unit_of = {m: u for u, members in ug.members_of.items() for m in members}
    in_degree = dict(ug.in_degree)
    out_edges = dict(ug.out_edges)
    for gid, shape in gathers.items():
        u = unit_of.get(shape, shape)
        out_edges[u] = [*out_edges[u], gid]
        out_edges[gid] = []
        in_degree[gid] = 1
    return replace(ug, in_degree=in_degree, out_edges=out_edges)


def transpose_shape_gathers(
    lg: LevelGraph, g: GraphRef, order: Sequence[NodeRef], skip: Sequence[str] = ()
) -> dict[str, str]:
    """A stand-in id for the Gather of each Shape of a model Transpose -> that Shape.

    ORT's transpose optimizer, run by the layout transform once the EP claimed nodes, turns
    ``Shape(Transpose(x, perm))`` into ``Gather(Shape(x), perm)`` (``HandleShape``), whatever
    the perm and wherever the Transpose runs; the EP takes the Gather in its second pass,
    and it reads the Shape and feeds the Shape's readers (measured on QNN HTP: a rank-6
    Transpose on the CPU and a rank-3 one on QNN). Only when the Transpose's input has a
    known rank: else the Shape's output has no shape and QNN refuses the Gather ("Cannot
    get shape"; Mistral's and Qwen3's dynamic exports at the disabled level)."""
    in_order = {n.path for n in order}
    out: dict[str, str] = {}
    for n in order:
        if n.op_type != "Shape" or not n.inputs or n.path in skip or not n.outputs:
            continue
        p = g.producers.get(n.inputs[0])
        if p is None or p.op_type != "Transpose" or p.path not in in_order or not p.inputs:
            continue
        if lg.value_type(g, p.inputs[0]).shape is not None:
            out[f"{n.path}#shape-gather"] = n.path
    return out


def with_shape_gathers(ug: UnitGraph, g: GraphRef, gathers: Mapping[str, str]) -> UnitGraph:
    """``ug`` with one more unit per Shape's Gather, between the Shape's unit and every
    unit that read the Shape; the Shape reads the Transpose's input in place of its output."""
    if not gathers:
        return ug
    unit_of = {m: u for u, members in ug.members_of.items() for m in members}
    in_degree = dict(ug.in_degree)
    out_edges = dict(ug.out_edges)
    roots = list(ug.roots)
    producer_of = {
        p.path: t
        for p in (n for c in g.consumers.values() for n in c)
        if p.op_type == "Shape" and p.inputs and (t := g.producers.get(p.inputs[0])) is not None
    }
    for gid, shape in gathers.items():
        u = unit_of.get(shape, shape)
        if u not in out_edges or len(ug.members_of.get(u, [u])) != 1:
            continue  # a Shape inside a larger unit: left as it is
        out_edges[gid] = out_edges[u]
        out_edges[u] = [gid]
        in_degree[gid] = 1
        transpose = producer_of.get(shape)
        if transpose is None:
            continue
        tu = unit_of.get(transpose.path, transpose.path)
        if u in out_edges.get(tu, []):
            edges = list(out_edges[tu])
            edges.remove(u)
            out_edges[tu] = edges
            in_degree[u] -= 1
        src = g.producers.get(transpose.inputs[0]) if transpose.inputs else None
        su = unit_of.get(src.path, src.path) if src is not None else None
        if su is not None and su in out_edges:
            out_edges[su] = [*out_edges[su], u]
            in_degree[u] += 1
        elif in_degree[u] == 0:
            roots.append(u)
    return replace(ug, in_degree=in_degree, out_edges=out_edges, roots=roots)


def regroup(
    rewrites: LayoutRewrites,
    ug: UnitGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    claimed: set[str],
) -> tuple[list[list[str]], list[str]]:
    """The EP's groups in its second pass over the rewritten graph, and the orphaned Shapes
    whose Gather ends in a group with no output (only the Gather and nodes left computing
    dropped shapes). The Gathers ORT writes after Shapes of Transposes, which the EP takes,
    are no model nodes: they are left out of the groups."""
    gathers = orphan_gathers(rewrites)
    extra = dict(rewrites.shape_gathers)
    prepared = with_shape_gathers(with_gathers(ug, gathers), g, extra)
    extra = {k: v for k, v in extra.items() if k in prepared.in_degree}
    groups = greedy_groups(g, order, claimed | set(gathers) | set(extra), prepared=prepared)
    failed: list[str] = []
    out: list[list[str]] = []
    for grp in groups:
        grp = [p for p in grp if p not in extra]
        real = [p for p in grp if p not in gathers]
        mine = [gathers[p] for p in grp if p in gathers]
        if mine and all(p in rewrites.dead for p in real):
            failed += mine
        if real:
            out.append(real)
    return out, failed

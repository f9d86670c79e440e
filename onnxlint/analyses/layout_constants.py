"""Constant-only graphs that ORT's layout transform writes for an NHWC EP (QNN): a shared
initializer rewritten in place, and the Squeeze/Transpose it gives the initializer's other
readers.

Once the EP has claimed nodes in its first capability pass, ORT's layout transform runs
and its transpose optimizer pushes every channel-first/last Transpose it may change
(``rules/ort_layout.json``; the model's own included, on nodes not yet assigned) through
the elementwise ops that follow (``PostLayoutTransformCostCheck``). Pushing one through a
broadcasting op whose other input is an initializer unsqueezes that initializer to the
op's rank and transposes it, in place (``UnsqueezeInput`` / ``TransposeInputImpl``, case
1, in ``onnx_transpose_optimization.cc``); when the initializer has other readers, each
gets a ``Squeeze`` (and, for more than one element, a ``Transpose``) of the rewritten
initializer, so that it still reads the old value. Those nodes read only a constant: the
EP takes them in its second pass, and when they join none of its other groups (the reader
they feed leads, through CPU nodes, to every group of the EP) they are a graph of their
own with no input, which fails ("Having zero graph inputs is not supported").

Measured on real QNN HTP sessions (``rules/facts/profiles/qnn-htp.json``,
``qnn-shared-constant-transpose``): a Conv's bias read by an Add after a ``Transpose(0, 2,
1)``, as vision transformers write the patch embedding and its LayerNorm; the exporter's
zero biases are one initializer once ORT merges equal ones (level 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from onnxlint.analyses.layout_outputs import push_through_all_ops, transposed_values
from onnxlint.analyses.level_graph import is_constant_node
from onnxlint.analyses.partition_units import UnitGraph, greedy_groups, unit_graph

if TYPE_CHECKING:
    from onnxlint.analyses.level_assignment import LevelAssignment
    from onnxlint.analyses.level_graph import LevelGraph
    from onnxlint.index import GraphRef, NodeRef
    from onnxlint.profiles import Profile

#: element types of the initializers whose Squeeze/Transpose the EP was seen to take
_FLOAT_TYPES = frozenset({"float", "float16"})


def shared_constant_readers(
    lg: LevelGraph,
    la: LevelAssignment,
    g: GraphRef,
    order: Sequence[NodeRef],
    ep: str,
    earlier: Sequence[str],
) -> dict[str, tuple[str, list[str]]]:
    """The initializers ORT rewrites in place while other nodes still read them: name ->
    (path of the first node whose Transpose push rewrites it, paths of the readers given
    the one Squeeze/Transpose of it, in graph order)."""
    pending = transposed_values(order, la, ep, earlier, static_input=False)
    if not pending:
        return {}
    broadcasting = push_through_all_ops()
    rewritten: dict[str, tuple[str, set[str]]] = {}  # initializer -> (first pusher, pushers)
    for n in order:
        if n.op_type not in broadcasting or (n.domain or "ai.onnx") != "ai.onnx":
            continue
        arriving = [i for i in n.inputs if i and i in pending]
        if not arriving or len({pending[i] for i in arriving}) != 1:
            continue
        na = la.get(n)
        if na is None or any(na.claims(e) for e in earlier):
            continue
        shapes = na.facts.input_shapes
        if not shapes or any(s is None for s in shapes):
            continue  # ORT unsqueezes to the op's rank: it needs every input's rank
        rank = len(pending[arriving[0]])
        for name in n.inputs:
            if not name or name in pending or not _local_constant(lg, g, name):
                continue
            vt = lg.value_type(g, name)
            if vt.shape is None or vt.dtype not in _FLOAT_TYPES or len(vt.shape) == 0:
                continue  # ORT leaves a scalar as it is
            count = lg.initializer_elements(g, name)
            if len(vt.shape) == rank and (count is None or count <= 1):
                continue  # neither unsqueezed nor transposed
            rewritten.setdefault(name, (n.path, set()))[1].add(n.path)
    out: dict[str, tuple[str, list[str]]] = {}
    for name, (first, pushers) in rewritten.items():
        readers = [c.path for c in g.consumers.get(name, []) if c.path not in pushers]
        if readers:
            out[name] = (first, list(dict.fromkeys(readers)))
    return out


def _local_constant(lg: LevelGraph, g: GraphRef, name: str) -> bool:
    """An initializer of this graph (not a graph input that overrides it), or a Constant
    output: ORT edits it in place (``GetLocalConstant``)."""
    if name in g.initializers:
        return name not in g.input_set or not lg.inputs_override_initializers
    producer = g.producers.get(name)
    return producer is not None and is_constant_node(producer)


def constant_only_readers(
    ug: UnitGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    claimed: set[str],
    rewritten: Mapping[str, tuple[str, list[str]]],
) -> list[str]:
    """The initializers whose Squeeze/Transpose the EP's second pass groups alone (no other
    node of the EP joins them): each is a graph with no input, and the session fails."""
    if not rewritten:
        return []
    unit_of = {m: u for u, members in ug.members_of.items() for m in members}
    in_degree = dict(ug.in_degree)
    out_edges = dict(ug.out_edges)
    roots = list(ug.roots)
    stand_ins: dict[str, str] = {}
    for name, (_first, readers) in rewritten.items():
        sid = f"{name}#layout-constant"
        units = list(dict.fromkeys(unit_of.get(r, r) for r in readers))
        units = [u for u in units if u in in_degree]
        if not units:
            continue
        stand_ins[sid] = name
        out_edges[sid] = units
        in_degree[sid] = 0
        for u in units:
            in_degree[u] += 1
            if in_degree[u] == 1:
                roots.remove(u)  # it waits for the new nodes now
        # ORT's new nodes come last in its node order: last among the roots
        roots.append(sid)
    prepared = replace(ug, in_degree=in_degree, out_edges=out_edges, roots=roots)
    groups = greedy_groups(g, order, claimed | set(stand_ins), prepared=prepared)
    alone: list[str] = []
    for grp in groups:
        if all(p in stand_ins for p in grp):
            alone += [stand_ins[p] for p in grp]
    return alone


def constant_rewrite_failures(
    lg: LevelGraph,
    la: LevelAssignment,
    g: GraphRef,
    order: Sequence[NodeRef],
    claimed: set[str],
    units: Mapping[str, list[str]],
    edges: tuple[dict[str, list[str]], dict[str, list[str]]],
    profile: Profile,
) -> dict[str, tuple[str, str]]:
    """The readers of a shared initializer whose Squeeze/Transpose, written by ORT's
    layout transform once the EP claimed nodes in its first pass, the EP then compiles as
    a graph with no input (``partitioning.layout_constant_rewrite``): path -> (EP, why).
    """
    out: dict[str, tuple[str, str]] = {}
    rule = profile.partitioning.layout_constant_rewrite
    if rule is None or g.depth > 0:
        return out  # ORT's layout transform does not enter control-flow bodies
    eps = [p.ep for p in la.profiles]
    earlier = eps[: eps.index(profile.ep)]
    rewritten = shared_constant_readers(lg, la, g, order, profile.ep, earlier)
    if not rewritten:
        return out
    ug = unit_graph(g, order, units, edges)
    by_path = {n.path: n for n in order}
    for name in constant_only_readers(ug, g, order, claimed, rewritten):
        pusher, readers = rewritten[name]
        others = f" and {len(readers) - 1} other nodes" if len(readers) > 1 else ""
        out.setdefault(
            readers[0],
            (
                profile.ep,
                f"ORT's layout transform pushes a Transpose through {by_path[pusher].label}, "
                f"rewrites the initializer `{name}` it shares with this node{others} in "
                f"place and gives this node a Squeeze/Transpose of it: {rule.reason}",
            ),
        )
    return out

"""Graph outputs that ORT's layout transformation moves behind a Transpose (NHWC EPs).

An EP that asks for NHWC (QNN) is given each layout-sensitive node it claimed wrapped in
Transposes; ORT's transpose optimizer then pushes the Transpose after the node down,
towards the graph outputs, through the ops ``rules/ort_layout.json`` lists, and asks the
EP again. A Transpose that reaches a graph output stays in front of it, so the node
that wrote that output no longer does: QNN, which refuses a DequantizeLinear that writes
a graph output, takes it in the second pass (the DequantizeLinear ORT adds after the
Transpose is the one left to the CPU). Measured on real QNN HTP sessions with a quantized
Conv and each kind of tail, and seen on every QDQ CNN export of the real-world corpus.

Only a node whose sole obstacle was writing a graph output changes: its verdict is asked
again with no graph output and, when the EP then takes it, becomes a claim that says why.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from onnxlint.analyses.capability import evaluate
from onnxlint.ep_names import CPU_EP

if TYPE_CHECKING:
    from onnxlint.analyses.level_assignment import LevelAssignment, NodeAssignment
    from onnxlint.analyses.level_graph import LevelGraph
    from onnxlint.index import NodeRef
    from onnxlint.profiles import Profile

#: the constraint kind that the layout transform can lift
GRAPH_OUTPUT_CONSTRAINT = "not_graph_output"


@functools.cache
def _table() -> dict[str, Any]:
    from onnxlint.data import load_json

    data: dict[str, Any] = load_json("ort_layout.json")
    return data


@functools.cache
def _ops(key: str) -> frozenset[str]:
    return frozenset(_table()["push_through"][key])


@functools.cache
def layout_sensitive_ops() -> frozenset[str]:
    """ORT's layout-sensitive op types, every domain (``rules/ort_layout.json``)."""
    return frozenset(op for ops in _table()["layout_sensitive_ops"].values() for op in ops)


@functools.cache
def pushed_through_ops() -> frozenset[str]:
    """The op types a pushed Transpose passes whatever their attributes: the elementwise
    ones, those it reaches on their first input, and the softmax family (their opset
    aside); reductions and Concat, which depend on attributes or every input, are left
    out."""
    keys = ("all", "first", "first_contrib", "softmax_from_opset_13")
    return frozenset(op for key in keys for op in _ops(key))


@functools.cache
def reductions_keeping_dims() -> frozenset[str]:
    """The reductions a pushed Transpose passes when they keep the reduced dims."""
    return _ops("reductions_keeping_dims")


@functools.cache
def push_through_all_ops() -> frozenset[str]:
    """The elementwise and broadcasting op types a pushed Transpose passes on any input
    (ORT transposes or unsqueezes their other inputs)."""
    return _ops("all")


def apply_layout_output_claims(lg: LevelGraph, result: LevelAssignment) -> None:
    """Claim, for each NHWC EP, the nodes it refused only for writing a graph output that
    its layout transform puts a Transpose in front of."""
    nhwc = [p for p in result.profiles if p.layout == "NHWC" and p.ep != CPU_EP]
    if not nhwc:
        return
    eps = [p.ep for p in result.profiles]
    for g in lg.graphs():
        if g.depth > 0:
            continue  # ORT's layout transform does not enter control-flow bodies
        order = lg.order(g)
        for profile in nhwc:
            # the graph outputs written by a node this EP refused for writing one: only
            # then is the graph walked (most graphs, and most EPs, have none)
            refused = [
                (name, na)
                for name in g.outputs
                if (producer := g.producers.get(name)) is not None
                and (na := result.get(producer)) is not None
                and (v := na.verdict_for(profile.ep)) is not None
                and not v.claimed
                and v.constraint == GRAPH_OUTPUT_CONSTRAINT
            ]
            if not refused:
                continue
            earlier = eps[: eps.index(profile.ep)]
            pending = transposed_values(order, result, profile.ep, earlier)
            for name, na in refused:
                if name not in pending:
                    continue
                claimed = _claim_again(result.nodes[na.path], profile, g.outputs, pending)
                if claimed is not None:
                    result.nodes[na.path] = claimed


def transposed_values(
    order: Sequence[NodeRef],
    result: LevelAssignment,
    ep: str,
    earlier: Sequence[str],
    static_input: bool = True,
) -> dict[str, tuple[int, ...]]:
    """The values of one graph (in ORT's order) that carry a pushed Transpose once ``ep``'s
    layout-sensitive nodes are converted and the Transposes pushed down, with its perm.

    The Transposes pushed are the one after each converted node (back to channels first)
    and the model's own Transposes between channels first and last, which ORT pushes as
    eagerly during the layout transform (seen only where the shape of the Transpose's input
    is static: with optimizations disabled a Transpose after a computed Reshape stays). A
    pushed Transpose that meets another is merged with it: gone when the two cancel, still
    pushed when the merged perm is again between channels first and last, stopped otherwise.
    A node another EP of higher priority took is never changed (ORT's ``CanModifyNode``);
    the CPU's nodes are still unassigned then, and are changed like the EP's own.
    ``static_input=False`` also pushes a model's Transpose whose input has a known rank
    but dimensions computed at run time (measured where it rewrites a shared initializer,
    :mod:`~onnxlint.analyses.layout_constants`).
    """
    sensitive = _table()["layout_sensitive_ops"]
    pending: dict[str, tuple[int, ...]] = {}
    for n in order:
        na = result.get(n)
        if na is None or any(na.claims(e) for e in earlier):
            continue
        domain = n.domain or "ai.onnx"
        shapes = na.facts.input_shapes
        first = shapes[0] if shapes else None
        # ORT converts no node whose input has an unknown rank
        if n.op_type in sensitive.get(domain, ()) and na.claims(ep) and first is not None:
            if n.outputs and n.outputs[0]:
                pending[n.outputs[0]] = to_channels_first(len(first))
            continue
        arriving = [i for i, name in enumerate(n.inputs) if name and name in pending]
        if n.op_type == "Transpose" and domain == "ai.onnx":
            perm = _perm(na, first)
            if perm is None or not n.outputs or not n.outputs[0]:
                continue
            if arriving:
                perm = tuple(pending[n.inputs[0]][i] for i in perm)
                if perm == tuple(range(len(perm))):
                    continue  # the two cancel
            elif first is None or (static_input and not all(isinstance(d, int) for d in first)):
                continue
            if _is_channel_perm(perm):
                pending[n.outputs[0]] = perm
            continue
        if not arriving:
            continue
        perms = {pending[n.inputs[i]] for i in arriving}
        if len(perms) == 1 and _pushes_through(n, na, arriving, pending):
            perm = perms.pop()
            pending.update((o, perm) for o in n.outputs if o)
    return pending


def to_channels_first(rank: int) -> tuple[int, ...]:
    """The perm of the Transpose back from channels last: (0, r-1, 1, ..., r-2)."""
    return (0, rank - 1, *range(1, rank - 1)) if rank >= 2 else tuple(range(rank))


def _is_channel_perm(perm: tuple[int, ...]) -> bool:
    rank = len(perm)
    if rank < 3:
        return False
    last = (0, *range(2, rank), 1)
    return perm in (last, to_channels_first(rank))


def _perm(na: NodeAssignment, first: Any) -> tuple[int, ...] | None:
    perm = na.facts.attributes.get("perm")
    if perm is None and first is not None:
        return tuple(reversed(range(len(first))))
    if not isinstance(perm, (list, tuple)) or not all(isinstance(i, int) for i in perm):
        return None
    if sorted(perm) != list(range(len(perm))):
        return None
    return tuple(perm)


def _pushes_through(
    n: NodeRef, na: NodeAssignment, arriving: Sequence[int], pending: dict[str, tuple[int, ...]]
) -> bool:
    """Whether the transpose optimizer pushes a Transpose arriving on ``arriving`` through
    ``n`` (rules/ort_layout.json: ops that change the rank or may cancel it stop it)."""
    op, domain = n.op_type, n.domain or "ai.onnx"
    if domain == "com.microsoft":
        return op in _ops("first_contrib") and 0 in arriving
    if domain != "ai.onnx":
        return False
    if op in _ops("all"):
        return True
    if op in _ops("first"):
        return 0 in arriving
    if op in _ops("reductions_keeping_dims"):
        return 0 in arriving and na.facts.attributes.get("keepdims", 1) == 1
    if op in _ops("softmax_from_opset_13"):
        return 0 in arriving and (na.facts.opset or 0) >= 13
    if op in _ops("when_every_input_is_transposed"):
        return all(name in pending for name in n.inputs if name)
    return False


def _claim_again(
    na: NodeAssignment,
    profile: Profile,
    outputs: Sequence[str],
    pending: dict[str, tuple[int, ...]],
) -> NodeAssignment | None:
    """``na`` with ``profile``'s refusal turned into a claim, when writing a graph output was
    its only obstacle and every graph output it writes is behind a Transpose."""
    v = na.verdict_for(profile.ep)
    if v is None or v.claimed or v.constraint != GRAPH_OUTPUT_CONSTRAINT:
        return None
    if any(o in outputs and o not in pending for o in na.node.outputs if o):
        return None
    again = evaluate(profile, replace(na.facts, graph_outputs=frozenset()))
    if not again.claimed:
        return None
    why = (
        f"{profile.ep} takes it in its second pass: ORT's layout transform leaves the "
        "Transpose back to NCHW between this node and the graph output, so it no longer "
        "writes a graph output"
    )
    claimed = replace(
        v, claimed=True, kind="supported", reason=why, constraint=None, slot=None, provenance=None
    )
    return replace(na, verdicts=tuple(claimed if x.ep == profile.ep else x for x in na.verdicts))

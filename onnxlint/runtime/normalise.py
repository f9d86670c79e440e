"""Map ORT's reported node assignment back onto the nodes of the source model.

What ORT reports differs from the model that was loaded (EP-BEHAVIOUR.md):

- QNN's layout transform (NHWC EP) renames claimed nodes (``conv0`` ->
  ``conv0_token_1``), moves them to the ``com.ms.internal.nhwc`` domain and
  inserts ``Transpose`` (and, around ``Shape``, ``Gather``) nodes;
- Constant nodes are never reported (ORT turns them into initializers);
- unnamed nodes come back with the name ``""``.

``match_assignment`` returns, for every node of the source graph, the EP ORT
put it on (or None where the report does not mention it), plus the reported
nodes that have no source counterpart (inserted by ORT).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onnxlint.runtime.results import AssignedNode

if TYPE_CHECKING:
    import onnx

NHWC_DOMAIN = "com.ms.internal.nhwc"
_TOKEN_RE = re.compile(r"(?:_token_\d+)+$")
# Ops ORT's layout transformer and QDQ handling insert on their own.
INSERTED_OPS = frozenset({"Transpose", "Gather", "DequantizeLinear", "QuantizeLinear", "Reshape"})


def strip_token(name: str) -> str:
    """``conv0_token_1`` -> ``conv0``."""
    return _TOKEN_RE.sub("", name)


def normalise_domain(domain: str) -> str:
    """The layout transform's internal NHWC domain is the ai.onnx op it came from."""
    if domain in (NHWC_DOMAIN, "ai.onnx"):
        return ""
    return domain


def normalise_node(node: AssignedNode) -> AssignedNode:
    return AssignedNode(
        name=strip_token(node.name),
        op_type=node.op_type,
        domain=normalise_domain(node.domain),
        ep=node.ep,
    )


@dataclass(frozen=True)
class SourceNode:
    """A node of the source graph (top level) identified by position."""

    index: int
    name: str
    op_type: str
    domain: str


@dataclass
class AssignmentMatch:
    """Source node index -> EP, and what could not be matched either way."""

    ep_by_index: dict[int, str] = field(default_factory=dict)
    unreported: list[int] = field(default_factory=list)  # source nodes ORT did not mention
    inserted: list[AssignedNode] = field(default_factory=list)  # reported, no source node
    constants: list[int] = field(default_factory=list)  # Constant nodes (never reported)

    def eps(self) -> set[str]:
        return set(self.ep_by_index.values())


def source_nodes(model: onnx.ModelProto | onnx.GraphProto) -> list[SourceNode]:
    graph = model.graph if hasattr(model, "graph") else model
    return [
        SourceNode(i, n.name, n.op_type, normalise_domain(n.domain))
        for i, n in enumerate(graph.node)
    ]


def match_assignment(
    source: Sequence[SourceNode] | onnx.ModelProto,
    reported: Sequence[AssignedNode],
) -> AssignmentMatch:
    """Pair reported nodes with source nodes.

    Named nodes match by name and op type: every name as reported first, then
    the rest after stripping ``_token_N``, then by that stem among source names;
    unnamed ones by op type and domain in order of appearance, which is the
    order ORT keeps for top-level nodes. A reported node that matches nothing
    is recorded as inserted. Nodes inside If/Loop bodies, which ORT also
    reports, are matched by name only when the caller includes them in
    ``source``.
    """
    nodes = list(source) if isinstance(source, Sequence) else source_nodes(source)
    result = AssignmentMatch()
    by_name: dict[tuple[str, str], list[SourceNode]] = defaultdict(list)
    #: named source nodes by their name without ORT's tokens (a graph ORT saved, whose
    #: generated names count tokens from another start than the session reported)
    by_stem: dict[tuple[str, str], list[SourceNode]] = defaultdict(list)
    unnamed: dict[tuple[str, str], list[SourceNode]] = defaultdict(list)
    for n in nodes:
        if n.op_type == "Constant" and n.domain == "":
            result.constants.append(n.index)
            continue
        if n.name:
            by_name[(n.name, n.op_type)].append(n)
            by_stem[(strip_token(n.name), n.op_type)].append(n)
        else:
            unnamed[(n.op_type, n.domain)].append(n)
    taken: set[int] = set()

    def take(cands: list[SourceNode] | None) -> SourceNode | None:
        while cands:
            c = cands.pop(0)
            if c.index not in taken:
                taken.add(c.index)
                return c
        return None

    # The passes, each over what the ones before it left:
    # 1. every name as reported: ORT's copies of a shared DequantizeLinear
    #    (``b_DequantizeLinear/duplicated``, ``.../duplicated_token_1``, ...) all strip to
    #    one name, and the first one reported must not take the source node of that name
    #    from the copy ORT reports under it later (an unnamed node: by op type, in order);
    # 2. the name without ORT's tokens (the layout transform's ``conv0_token_1`` is ``conv0``);
    # 3. a generated name whose tokens differ (``gemm_input_reshape_token_7`` reported, the
    #    level-1 graph's ``gemm_input_reshape_token_5``): the first of that stem left;
    # 4. a renamed node whose generated name is not the source name (the source was
    #    unnamed but ORT named an inserted copy): by op type, never for an inserted op.
    def as_reported(raw: AssignedNode, r: AssignedNode) -> SourceNode | None:
        if raw.name:
            return take(by_name.get((raw.name, r.op_type)))
        return take(unnamed.get((r.op_type, r.domain)))

    def stripped(raw: AssignedNode, r: AssignedNode) -> SourceNode | None:
        return take(by_name.get((r.name, r.op_type))) if r.name else None

    def by_token_stem(raw: AssignedNode, r: AssignedNode) -> SourceNode | None:
        return take(by_stem.get((r.name, r.op_type))) if r.name else None

    def by_op(raw: AssignedNode, r: AssignedNode) -> SourceNode | None:
        if r.op_type in INSERTED_OPS:
            return None
        return take(unnamed.get((r.op_type, r.domain)))

    left = list(reported)
    for match in (as_reported, stripped, by_token_stem, by_op):
        unmatched: list[AssignedNode] = []
        for raw in left:
            r = normalise_node(raw)
            c = match(raw, r)
            if c is not None:
                result.ep_by_index[c.index] = r.ep
            else:
                unmatched.append(raw)
        left = unmatched
    result.inserted.extend(left)
    matched = set(result.ep_by_index) | set(result.constants)
    result.unreported = [n.index for n in nodes if n.index not in matched]
    return result

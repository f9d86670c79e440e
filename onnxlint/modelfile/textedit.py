"""Reading an edited ONNX text document by parsing only the node statement that changed.

A keystroke in an ``.onnxtxt`` changes one node's statement far more often than
anything else, and parsing the whole document again (the text parser, the nesting
pre-scan and the whole-model limits) cost half of a re-lint of a 1k-node document in
the language server (docs/performance.md). :func:`splice_node_edit` takes the model
parsed from the old text, the old and the new text and the lines of the one node
statement the edit falls in, and returns the :class:`LoadedModel` that reading the new
text would give, with the node replaced in a copy of the old model; or None whenever
it cannot show that, and the caller reads the whole text as before.

What it shows, and why that is enough:

- the two texts differ only inside the statement's lines (common prefix and suffix);
- those lines of the old text parse, alone, as exactly that node: they hold that one
  statement and nothing else (no graph header, no second node), so the parser, which
  reads the unchanged text before them in the same state, read them as that node;
- the same lines of the new text parse, alone, as exactly one node, which ends where
  the old one ended, so the parser goes on after them as it did before;
- neither node holds a subgraph (the model's nesting and node count are the old ones),
  the new statement nests no deeper than the old one did (the document's deepest
  bracket is at most the old one's, which passed), and the new node's own strings,
  types and inputs/outputs are within the limits the whole-model checks apply; a model
  with local functions has its expansion counted again (the op may now call one).

The old model must have loaded with no problem at all, so the first problem in the new
one could only be in the new node, where it is looked for. ``tests/modelfile/
test_textedit.py`` checks the result against reading the new text, edit by edit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx

from onnxlint.index import GraphRef, NodeRef, stored_graphs, subgraphs
from onnxlint.limits import Limits
from onnxlint.modelfile.measure import count_expansion, node_within_limits
from onnxlint.modelfile.prescan import text_nesting, text_nesting_limit
from onnxlint.modelfile.read import (
    LoadedModel,
    looks_like_text,
    text_payload,
    text_payload_hash,
)
from onnxlint.tensors import node_has_external_data

#: statements longer than this are read with the whole document (a node with megabytes
#: of attribute values gains nothing from being parsed alone)
MAX_STATEMENT_CHARS = 1 << 16


@dataclass(frozen=True)
class Splice:
    """What :func:`splice_node_edit` read: the new document's model, and the node it
    replaced (``was``, the old model's) with the one the edit wrote (``now``, the new
    model's), at ``site``; what analyses carried over from the old model compare."""

    loaded: LoadedModel
    site: NodeSite
    was: onnx.NodeProto
    now: onnx.NodeProto
    #: :func:`changed_span` of the old and new texts (None: a binary model's edit)
    span: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class NodeSite:
    """Where a node sits in the model and in the old text.

    ``steps``: from the main graph (or ``function``'s body) to the node's graph, the
    (node index, position among that node's bodies) of each owner; ``index``: the node's
    position in its graph; ``first_line``/``last_line``: the lines of its statement in the
    old text (0-based, inclusive)."""

    steps: tuple[tuple[int, int], ...]
    function: int | None
    index: int
    first_line: int
    last_line: int


def node_site(
    model: onnx.ModelProto, ref: NodeRef, first_line: int, last_line: int
) -> NodeSite | None:
    """The site of a node of ``model``'s index (None: its graph cannot be found again in a
    copy of ``model``)."""
    steps: list[tuple[int, int]] = []
    g: GraphRef = ref.graph
    while g.parent is not None:
        owner = g.parent
        bodies = list(owner.subgraphs.values())
        if len(bodies) != len(subgraphs(owner.node)):
            return None  # two bodies under one name: positions would not line up
        k = next((k for k, b in enumerate(bodies) if b is g), -1)
        if k < 0:
            return None
        steps.append((owner.index, k))
        g = owner.graph
    function = None
    if g.function is not None:
        # the index keys functions by (domain, name); the model lists them in order
        fn = g.function
        found = [
            k for k, f in enumerate(model.functions) if (f.domain, f.name) == (fn.domain, fn.name)
        ]
        if len(found) != 1:
            return None
        function = found[0]
    return NodeSite(tuple(reversed(steps)), function, ref.index, first_line, last_line)


def _nodes_at(model: onnx.ModelProto, site: NodeSite) -> Any:
    """The repeated node field of the site's graph in ``model`` (None: not there)."""
    if site.function is not None:
        if site.function >= len(model.functions):
            return None
        nodes = model.functions[site.function].node
    else:
        nodes = model.graph.node
    for owner, k in site.steps:
        if owner >= len(nodes):
            return None
        bodies = subgraphs(nodes[owner])
        if k >= len(bodies):
            return None
        nodes = bodies[k][1].node
    return nodes


def _line_start(text: str, at: int, back: int) -> int:
    """The offset where the line ``back`` lines above the one holding ``at`` begins
    (-1: the text has fewer lines above)."""
    begin = text.rfind("\n", 0, at) + 1
    for _ in range(back):
        if begin == 0:
            return -1
        begin = text.rfind("\n", 0, begin - 1) + 1
    return begin


def _line_end(text: str, at: int, forward: int) -> int:
    """The offset of the newline that ends the line ``forward`` lines below the one
    holding ``at`` (the text's length for its last line; -1: fewer lines below)."""
    end = text.find("\n", at)
    for _ in range(forward):
        if end < 0:
            return -1
        end = text.find("\n", end + 1)
    return len(text) if end < 0 else end


def _one_node(statement: str) -> onnx.NodeProto | None:
    """The node ``statement`` holds when it is exactly one node statement (comments and
    blank space around it aside), else None."""
    try:
        graph = onnx.parser.parse_graph(f"g () => () {{\n{statement}\n}}")
    except Exception:
        return None
    if len(graph.node) != 1 or graph.input or graph.output or graph.initializer:
        return None
    node: onnx.NodeProto = graph.node[0]
    return node


def _holds_graph(node: onnx.NodeProto) -> bool:
    # the fields, whatever the attribute's type says: a parsed node is not checked yet
    return next(stored_graphs(node.attribute), None) is not None


def changed_span(old: str, new: str) -> tuple[int, int, int]:
    """``(start, old_end, new_end)``: the two texts differ in ``old[start:old_end]`` and
    ``new[start:new_end]`` only."""
    prefix = common_prefix(old, new)
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    return prefix, len(old) - suffix, len(new) - suffix


def splice_node_edit(
    model: onnx.ModelProto,
    old: str,
    new: str,
    site: NodeSite,
    limits: Limits,
    span: tuple[int, int, int] | None = None,
    *,
    data: bytes | None = None,
    data_hash: str | None = None,
    at_line: int | None = None,
    external: bool | None = None,
) -> Splice | None:
    """What reading ``new`` gives, from ``model`` (read from ``old`` with these ``limits``
    and no problem at all: the caller vouches for that), when the two texts differ inside
    the node statement at ``site`` only; None when that cannot be shown.

    ``model`` is not changed: the result holds a copy. ``span``: :func:`changed_span` of
    the two texts, when the caller has it; ``data``: ``new`` encoded as UTF-8 and
    ``data_hash`` its SHA-256, when the caller has them (not computed again); ``at_line``:
    the line of ``old`` the change starts on, likewise; ``external``: whether ``model`` has
    an external tensor (``LoadedModel.external``), when known."""
    start, old_end, new_end = span if span is not None else changed_span(old, new)
    if at_line is None:
        at_line = old.count("\n", 0, start)
    if site.first_line > at_line:
        return None
    a = _line_start(old, start, at_line - site.first_line)
    b = _line_end(old, start, site.last_line - at_line) if site.last_line >= at_line else -1
    if a < 0 or b < 0 or old_end > b or b - a > MAX_STATEMENT_CHARS:
        return None
    shift = len(new) - len(old)
    old_statement, new_statement = old[a:b], new[a : b + shift]
    if len(new_statement) > MAX_STATEMENT_CHARS:
        return None
    nodes = _nodes_at(model, site)
    if nodes is None or site.index >= len(nodes):
        return None
    was: onnx.NodeProto = nodes[site.index]
    if _holds_graph(was) or _one_node(old_statement) != was:
        return None
    node = _one_node(new_statement)
    if node is None or _holds_graph(node) or not node_within_limits(node, limits):
        return None
    cap = text_nesting_limit(limits)
    if text_nesting(new_statement, stop=cap) > text_nesting(old_statement, stop=cap):
        return None
    if data is None:
        data, data_hash = new.encode("utf-8"), None
    payload = text_payload(data)
    if payload is None or len(payload) > limits.max_file_bytes or not looks_like_text(payload):
        return None
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    target = _nodes_at(copy, site)
    assert target is not None
    target[site.index].CopyFrom(node)
    if copy.functions and count_expansion(copy, limits) is not None:
        return None
    # a document without leading comments is its own payload: its hash is the caller's
    digest = data_hash if data_hash and payload == data else text_payload_hash(payload)
    loaded = LoadedModel(model=copy, content_hash=digest, size=len(payload))
    loaded.is_text = True
    if external is False and not node_has_external_data(node):
        loaded.external = False
    return Splice(loaded, site, was, target[site.index], (start, old_end, new_end))


def common_prefix(a: str, b: str, start: int = 0) -> int:
    """The length of the longest common prefix (slices compared in C, halving).

    ``start``: a length the caller knows the two share; the search goes on from there,
    in chunks that double until one differs, so it reads about as far as the prefix
    runs past ``start`` rather than the whole text."""
    lo, hi = start, min(len(a), len(b))
    step = 1 << 12
    while lo < hi:
        end = min(hi, lo + step)
        if a[lo:end] != b[lo:end]:
            hi = end - 1  # the first difference lies in a[lo:end]
            break
        lo, step = end, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int, start: int = 0) -> int:
    """The length of the longest common suffix, at most ``limit``; ``start``: a length
    the caller knows the two share (see :func:`common_prefix`)."""
    lo, hi = min(start, limit), limit
    step = 1 << 12
    while lo < hi:
        end = min(hi, lo + step)
        if a[len(a) - end : len(a) - lo] != b[len(b) - end : len(b) - lo]:
            hi = end - 1
            break
        lo, step = end, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo

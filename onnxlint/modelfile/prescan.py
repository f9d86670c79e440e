"""Counting what bytes and text would hold before they are decoded.

A node costs about two bytes on the wire but hundreds once decoded, and ``onnx.parser``
overflows the C stack on deep brackets, so large binaries are counted on the protobuf
wire (only the messages that can hold nodes are entered) and ONNX text has its bracket
nesting measured first. Neither decodes anything.
"""

from __future__ import annotations

import re

from onnxlint.limits import Limits

#: nesting beyond this is refused in ONNX text whatever the configured limit, because
#: onnx.parser overflows the C stack somewhere between 2,000 and 5,000 levels
TEXT_NESTING_CAP = 1000
#: the characters the nesting scan stops at; strings and comments are skipped with
#: str.find (a regex for a whole quoted string used ~150 bytes per character of it)
_TEXT_SPECIAL = re.compile(r'["#{}()\[\]]')


def text_nesting_limit(limits: Limits) -> int:
    # each subgraph level costs one brace, plus a few for types and attribute lists
    return min(TEXT_NESTING_CAP, 4 * limits.max_subgraph_depth + 16)


def text_nesting(text: str, stop: int) -> int:
    """Deepest bracket nesting (``{``, ``(``, ``[``) outside strings and comments.

    Returns as soon as the depth passes ``stop``; unbalanced closers never go below 0.
    Linear in time and constant in memory. A quote with no closing quote is skipped
    alone, so brackets after it still count.
    """
    depth = deepest = pos = 0
    search = _TEXT_SPECIAL.search
    while (match := search(text, pos)) is not None:
        char, at = match.group(), match.start()
        pos = at + 1
        if char == '"':
            end = _string_end(text, at + 1)
            if end >= 0:
                pos = end + 1
        elif char == "#":
            newline = text.find("\n", pos)
            if newline < 0:
                break
            pos = newline + 1
        elif char in "{([":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
        else:
            depth = max(0, depth - 1)
    return deepest


def _string_end(text: str, start: int) -> int:
    """Index of the quote closing a string that starts at ``start``, or -1."""
    at = start
    while (quote := text.find('"', at)) >= 0:
        backslashes = 0
        while quote - backslashes - 1 >= start and text[quote - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return quote
        at = quote + 1
    return -1


# ONNX field numbers (onnx.proto) of the messages that can contain nodes
_MODEL, _GRAPH, _NODE, _ATTR, _FUNC, _TRAIN = range(6)


_CHILDREN: dict[tuple[int, int], int] = {
    (_MODEL, 7): _GRAPH,  # ModelProto.graph
    (_MODEL, 20): _TRAIN,  # ModelProto.training_info
    (_MODEL, 25): _FUNC,  # ModelProto.functions
    (_TRAIN, 1): _GRAPH,  # TrainingInfoProto.initialization
    (_TRAIN, 2): _GRAPH,  # TrainingInfoProto.algorithm
    (_GRAPH, 1): _NODE,  # GraphProto.node
    (_FUNC, 7): _NODE,  # FunctionProto.node
    (_FUNC, 11): _ATTR,  # FunctionProto.attribute_proto
    (_NODE, 5): _ATTR,  # NodeProto.attribute
    (_ATTR, 6): _GRAPH,  # AttributeProto.g
    (_ATTR, 11): _GRAPH,  # AttributeProto.graphs
}


#: fields the wire walk counts: what they are, by (message kind, field number)
_COUNTED: dict[tuple[int, int], str] = {
    (_GRAPH, 5): "initializers",  # GraphProto.initializer
    (_GRAPH, 15): "initializers",  # GraphProto.sparse_initializer
    (_GRAPH, 13): "value_info",  # GraphProto.value_info
    (_FUNC, 12): "value_info",  # FunctionProto.value_info
    (_GRAPH, 11): "io",  # GraphProto.input
    (_GRAPH, 12): "io",  # GraphProto.output
    (_FUNC, 4): "io",  # FunctionProto.input
    (_FUNC, 5): "io",  # FunctionProto.output
    (_NODE, 1): "io",  # NodeProto.input
    (_NODE, 2): "io",  # NodeProto.output
}


#: ``_COUNTED`` and ``_CHILDREN`` in one table, ``(what is counted, child kind)`` by (message
#: kind, field number), so that the walk looks a field up once
_ACTIONS: dict[tuple[int, int], tuple[str | None, int | None]] = {
    field: (_COUNTED.get(field), _CHILDREN.get(field)) for field in {*_COUNTED, *_CHILDREN}
}


#: how a wire-level limit message names where it is (no names are decoded there)
_WIRE_WHERE = {_GRAPH: "<subgraph>", _FUNC: "<function>", _NODE: "the model"}


class _Malformed(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def top_level_fields(buf: bytes) -> list[tuple[int, int, int, int]] | None:
    """The top-level fields of a serialized message, in wire order, without decoding any:
    ``(field number, wire type, start, end)``, ``buf[start:end]`` being the field with its
    tag. None for bytes that are not valid protobuf (a group, a length past the end).
    """
    # the same skipping as ``_WireCounts.walk``, which keeps it inline: a call per field
    # there cost 10-25 % of a large file's count
    fields: list[tuple[int, int, int, int]] = []
    pos, end = 0, len(buf)
    try:
        while pos < end:
            start = pos
            tag, pos = _varint(buf, pos, end)
            wire = tag & 7
            if wire == 0:
                _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length, pos = _varint(buf, pos, end)
                pos += length
            else:
                return None  # groups do not occur in ONNX
            if pos > end or tag >> 3 == 0:
                return None
            fields.append((tag >> 3, wire, start, pos))
    except _Malformed:
        return None
    return fields


def count_nodes_on_wire(buf: bytes, stop: int, max_stack: int = 512) -> int | None:
    """Count NodeProtos in a serialized ModelProto without decoding it.

    Stops once the count passes ``stop``. Returns None for bytes that are not valid
    protobuf or nest deeper than ``max_stack`` messages; the decoder then reports them.
    """
    others = ("max_initializers", "max_value_info", "max_graph_io", "max_node_io")
    counts = _WireCounts(Limits(max_nodes=stop, **dict.fromkeys(others, 2**63)))
    return counts.nodes if counts.walk(buf, max_stack) else None


def over_limits_on_wire(buf: bytes, limits: Limits) -> tuple[str, dict[str, object]] | None:
    """The first count of a serialized ModelProto over ``limits``, without decoding it.

    ``("nodes", {"count", "limit"})`` for ``max-nodes``, else an OL008 message id and
    its arguments (initializers, value_info, graph and node inputs plus outputs). None
    when nothing is over, or when the bytes are not valid protobuf (the decoder says so).
    Decoding costs about ten times the wire size for small messages (an If declaring
    10^6 typed outputs, 54 MB, peaked at 678 MB before it was refused after decoding).
    """
    counts = _WireCounts(limits)
    if not counts.walk(buf):
        return None
    return counts.over


class _WireCounts:
    """Walks only the messages that can hold nodes (graphs, nodes, attributes, functions,
    training info) and skips everything else by its length, so weights cost nothing;
    counts the fields it passes. Depth-first, so memory stays proportional to the
    nesting, not to the counts. Stops at the first count over its limit."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.nodes = self.initializers = self.value_info = 0
        self.over: tuple[str, dict[str, object]] | None = None

    def walk(self, buf: bytes, max_stack: int = 512) -> bool:
        """Count; False for bytes that are not valid protobuf or nest too deep."""
        limits = self.limits
        # (resume position, end, kind, inputs plus outputs seen) of the enclosing messages
        stack: list[tuple[int, int, int, int]] = []
        pos, end, kind, io = 0, len(buf), _MODEL, 0
        try:
            while True:
                if pos >= end:
                    if pos > end:
                        return False
                    if not stack:
                        return True
                    pos, end, kind, io = stack.pop()
                    continue
                # one-byte varints (almost every tag and length) are read inline; a call
                # per varint was a third of the walk. pos < end holds here (checked above).
                tag = buf[pos]
                if tag < 0x80:
                    pos += 1
                else:
                    tag, pos = _varint(buf, pos, end)
                wire = tag & 7
                if wire == 0:
                    if pos < end and buf[pos] < 0x80:
                        pos += 1
                    else:
                        _, pos = _varint(buf, pos, end)
                elif wire == 1:
                    pos += 8
                elif wire == 5:
                    pos += 4
                elif wire == 2:
                    if pos < end and (length := buf[pos]) < 0x80:
                        pos += 1
                    else:
                        length, pos = _varint(buf, pos, end)
                    # one lookup for both tables: most fields are in neither (names, weights)
                    action = _ACTIONS.get((kind, tag >> 3))
                    if action is None:
                        pos += length
                        continue
                    counted, child = action
                    if counted is not None and self._count(counted, kind, io + 1, len(stack)):
                        return True
                    if counted == "io":
                        io += 1
                    if child is None:
                        pos += length
                        continue
                    if pos + length > end or len(stack) >= max_stack:
                        return False
                    if child == _NODE:
                        self.nodes += 1
                        if self.nodes > limits.max_nodes:
                            self.over = ("nodes", {"count": self.nodes, "limit": limits.max_nodes})
                            return True
                    # resume this message after the child, and descend into the child now
                    stack.append((pos + length, end, kind, io))
                    end, kind, io = pos + length, child, 0
                else:
                    return False  # groups do not occur in ONNX
        except _Malformed:
            return False

    def _count(self, counted: str, kind: int, io: int, depth: int) -> bool:
        """Count one field; True (with ``over`` set) when that passes a limit."""
        limits = self.limits
        if counted == "initializers":
            self.initializers += 1
            count, limit = self.initializers, limits.max_initializers
            args: dict[str, object] = {}
        elif counted == "value_info":
            self.value_info += 1
            count, limit, args = self.value_info, limits.max_value_info, {}
        elif kind == _NODE:
            counted, count, limit = "node_io", io, limits.max_node_io
            args = {"where": _WIRE_WHERE[kind]}
        else:
            counted, count, limit = "graph_io", io, limits.max_graph_io
            main = kind == _GRAPH and depth == 1
            args = {"where": "main" if main else _WIRE_WHERE[kind]}
        if count > limit:
            self.over = (counted, {**args, "count": count, "limit": limit})
        return self.over is not None

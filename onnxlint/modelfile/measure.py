"""Measuring a decoded model against the limits before anything else walks it.

Subgraph depth, node count, declarations (initializers, value_info, graph and node
I/O), the node count once local functions are expanded, type nesting and string
fields (UTF-8, name length). Every walk is iterative, so a hostile model cannot
overflow the stack; each returns the first problem and stops there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from onnxlint.index import stored_graphs
from onnxlint.limits import Limits

#: types nest (sequence of map of optional ...) at most this deep; real models use 2 or 3,
#: and protobuf's C code and onnxlint's type printing recurse per level
MAX_TYPE_NESTING = 32


def deepest_type(model: onnx.ModelProto, stop: int) -> int:
    """The deepest TypeProto nesting of any value, stopping once past ``stop``.

    Looks at graph inputs, outputs and value_info of every graph and function, and at
    ``TYPE_PROTO(S)`` attributes; iterative, so a 50,000-deep type cannot overflow, and
    each type is measured as it is met (no list of a million wrappers).
    """
    graphs = [model.graph] + [
        g for t in model.training_info for g in (t.initialization, t.algorithm)
    ]
    node_lists: list[Sequence[onnx.NodeProto]] = [f.node for f in model.functions]
    deepest = 0
    for f in model.functions:
        for v in f.value_info:
            deepest = max(deepest, _type_depth(v.type, stop))
    while (graphs or node_lists) and deepest <= stop:
        if graphs:
            g = graphs.pop()
            for values in (g.input, g.output, g.value_info):
                for v in values:
                    deepest = max(deepest, _type_depth(v.type, stop))
            node_lists.append(g.node)
            continue
        for node in node_lists.pop():
            for attr in node.attribute:
                if attr.HasField("tp"):
                    deepest = max(deepest, _type_depth(attr.tp, stop))
                for tp in attr.type_protos:
                    deepest = max(deepest, _type_depth(tp, stop))
            graphs += [g for _, _, g in stored_graphs(node.attribute)]
    return deepest


def _type_depth(tp: onnx.TypeProto, stop: int) -> int:
    depth = 0
    while depth <= stop:
        kind = tp.WhichOneof("value")
        if kind == "sequence_type":
            tp = tp.sequence_type.elem_type
        elif kind == "map_type":
            tp = tp.map_type.value_type
        elif kind == "optional_type":
            tp = tp.optional_type.elem_type
        else:
            break
        depth += 1
    return depth


def count_declarations(
    model: onnx.ModelProto, limits: Limits
) -> tuple[str, dict[str, object]] | None:
    """The first count over its limit: initializers, value_info, graph and node I/O.

    Iterative over every graph (subgraphs, function bodies, training graphs); run after
    the depth and node-count checks, so the walk itself is bounded.
    """
    bodies: list[onnx.FunctionProto] = list(model.functions)
    graphs: list[tuple[onnx.GraphProto, str]] = [(model.graph, "main")]
    for info in model.training_info:
        graphs += [(info.initialization, "training"), (info.algorithm, "training")]
    initializers = value_info = 0
    while graphs or bodies:
        nodes: Sequence[onnx.NodeProto]
        if graphs:
            graph, where = graphs.pop()
            io = len(graph.input) + len(graph.output)
            initializers += len(graph.initializer) + len(graph.sparse_initializer)
            value_info += len(graph.value_info)
            nodes = graph.node
        else:
            func = bodies.pop()
            where = f"fn:{func.domain}.{func.name}"
            io = len(func.input) + len(func.output)
            value_info += len(func.value_info)
            nodes = func.node
        if io > limits.max_graph_io:
            return "graph_io", {"where": where, "count": io, "limit": limits.max_graph_io}
        if initializers > limits.max_initializers:
            return "initializers", {"count": initializers, "limit": limits.max_initializers}
        if value_info > limits.max_value_info:
            return "value_info", {"count": value_info, "limit": limits.max_value_info}
        for node in nodes:
            node_io = len(node.input) + len(node.output)
            if node_io > limits.max_node_io:
                args = {"where": where, "count": node_io, "limit": limits.max_node_io}
                return "node_io", args
            graphs += [
                (g, f"{where}/{node.op_type}:{name}")
                for name, _, g in stored_graphs(node.attribute)
            ]
    return None


def count_expansion(model: onnx.ModelProto, limits: Limits) -> tuple[str, dict[str, object]] | None:
    """Nodes once every call of a model-local function is expanded, bounded by max-nodes.

    A function that calls the next twice per level is 30 levels of 2^30 call sites in a
    few KB; shape inference and ORT expand them all. Counted bottom-up over the call
    graph (a function's size is computed once); a call cycle counts as the node itself.
    """
    local = {(f.domain, f.name): f for f in model.functions}
    if not local:
        return None
    limit = limits.max_nodes
    size: dict[tuple[str, str], int] = {}

    def calls(nodes: Sequence[onnx.NodeProto]) -> list[tuple[str, str]]:
        out = []
        stack = [nodes]
        while stack:
            for node in stack.pop():
                if (node.domain, node.op_type) in local:
                    out.append((node.domain, node.op_type))
                stack += [g.node for _, _, g in stored_graphs(node.attribute)]
        return out

    def expanded(key: tuple[str, str]) -> int:
        # iterative post-order over the call graph; ``size`` memoizes, ``-1`` marks a
        # function in progress (a call cycle, which onnx rejects: counted as one node)
        todo: list[tuple[tuple[str, str], bool]] = [(key, False)]
        while todo:
            current, ready = todo.pop()
            if ready:
                total = _count_all(local[current].node)  # subgraphs included
                for callee in calls(local[current].node):
                    got = size.get(callee, 1)
                    total += max(got, 1) - 1  # the call node is replaced by the body
                size[current] = min(total, limit + 1)
                continue
            if current in size:
                continue
            size[current] = -1
            todo.append((current, True))
            todo += [(c, False) for c in set(calls(local[current].node)) if c not in size]
        return size[key]

    total = 0
    roots = [model.graph.node] + [info.algorithm.node for info in model.training_info]
    for nodes in roots:
        total += _count_all(nodes)
        for callee in calls(nodes):
            total += max(expanded(callee), 1) - 1
            if total > limit:
                return "expansion", {"count": total, "limit": limit}
    return None


def _count_all(nodes: Sequence[onnx.NodeProto]) -> int:
    count, stack = 0, [nodes]
    while stack:
        batch = stack.pop()
        count += len(batch)
        for node in batch:
            stack += [g.node for _, _, g in stored_graphs(node.attribute)]
    return count


def first_non_utf8_string(model: onnx.ModelProto) -> str | None:
    """The full name of the first string field holding invalid UTF-8, or None.

    ONNX is proto2, so the decoder accepts any bytes in ``string`` fields and returns
    them as ``bytes`` instead of ``str``; iterative, so deep models cannot overflow.
    """
    problem = first_string_problem(model, None)
    return problem[0] if problem is not None and problem[1] is None else None


#: free text, not names: exempt from max-name-length
_FREE_TEXT_FIELDS = frozenset({"doc_string", "onnx.StringStringEntryProto.value"})


def first_string_problem(
    model: onnx.ModelProto, max_length: int | None
) -> tuple[str, int | None] | None:
    """The first string field holding invalid UTF-8 (``(field, None)``) or, with
    ``max_length``, a name longer than that (``(field, length)``); None when all are fine.

    Doc strings and key/value entries' values are free text and not length-checked.
    """
    string, message = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    limit = max_length if max_length is not None else -1
    stack: list[Message] = [model]
    while stack:
        msg = stack.pop()
        fields = _tensor_fields(msg) if isinstance(msg, onnx.TensorProto) else msg.ListFields()
        for fd, value in fields:
            # the value's own type says whether the field is repeated (works on every
            # protobuf release, unlike FieldDescriptor.label / .is_repeated)
            if fd.type == string:
                if isinstance(value, str):
                    longest = len(value)
                elif isinstance(value, bytes):
                    return fd.full_name, None
                else:
                    # one pass, no generator: a node's inputs and outputs come through here
                    longest = 0
                    for v in value:
                        if not isinstance(v, str):
                            return fd.full_name, None
                        if len(v) > longest:
                            longest = len(v)
                # the cheap comparison first: free text is rare, long names rarer
                if (
                    0 <= limit < longest
                    and fd.name not in _FREE_TEXT_FIELDS
                    and fd.full_name not in _FREE_TEXT_FIELDS
                ):
                    return fd.full_name, longest
            elif fd.type == message:
                if isinstance(value, Message):
                    stack.append(value)
                else:
                    stack.extend(value)
    return None


#: a tensor's string and message fields, by number (the order ``ListFields`` gives)
_TENSOR_TEXT_FIELDS = tuple(
    sorted(
        (
            fd
            for fd in onnx.TensorProto.DESCRIPTOR.fields
            if fd.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE)
        ),
        key=lambda fd: fd.number,
    )
)


def node_within_limits(node: onnx.NodeProto, limits: Limits) -> bool:
    """Whether one node that holds no graph passes the whole-model load checks that
    could newly fail on it: its inputs plus outputs, its strings (UTF-8, name lengths)
    and its type nesting (for the edit of one node of a model that passed them)."""
    if len(node.input) + len(node.output) > limits.max_node_io:
        return False
    alone = onnx.ModelProto()
    alone.graph.node.append(node)
    if first_string_problem(alone, limits.max_name_length) is not None:
        return False
    return deepest_type(alone, MAX_TYPE_NESTING) <= MAX_TYPE_NESTING


def _tensor_fields(tensor: onnx.TensorProto) -> list[tuple[FieldDescriptor, Any]]:
    """What ``tensor.ListFields()`` lists of its string and message fields, without the
    rest: ``ListFields`` hands back ``raw_data`` too, a copy of the weights (a tenth of a
    second per walk over BERT-base's), which :func:`first_string_problem` never reads."""
    out: list[tuple[FieldDescriptor, Any]] = []
    for fd in _TENSOR_TEXT_FIELDS:
        value = getattr(tensor, fd.name)
        # a singular field is listed when present, a repeated one when not empty (the
        # value's type tells which, as in first_string_problem)
        if isinstance(value, (str, bytes, Message)):
            if tensor.HasField(fd.name):
                out.append((fd, value))
        elif len(value):
            out.append((fd, value))
    return out


def measure(model: onnx.ModelProto, limits: Limits) -> tuple[int, int]:
    """Deepest subgraph nesting and total node count, iteratively (no recursion).

    Function bodies and training graphs count as top-level graphs; a subgraph is
    entered whether or not the attribute's type names it (a hostile model may set both).
    """
    stack: list[tuple[Sequence[onnx.NodeProto], int]] = [(model.graph.node, 0)]
    stack += [(f.node, 0) for f in model.functions]
    for info in model.training_info:
        stack += [(info.initialization.node, 0), (info.algorithm.node, 0)]
    max_depth = count = 0
    while stack:
        nodes, depth = stack.pop()
        max_depth = max(max_depth, depth)
        if depth > limits.max_subgraph_depth or count > limits.max_nodes:
            break
        count += len(nodes)
        for node in nodes:
            stack.extend((g.node, depth + 1) for _, _, g in stored_graphs(node.attribute))
    return max_depth, count


#: the fields of a tensor whose serialised size :func:`serialized_size` computes from its
#: dataless stub (anything else, e.g. typed data or a doc string: the model is serialised)
_STUB_FIELDS = frozenset({"name", "data_type", "dims", "raw_data"})


def _varint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def serialized_size(model: onnx.ModelProto) -> int:
    """``model.ByteSize()``, without serialising the large initializers' data.

    upb computes ``ByteSize()`` by serialising the message: on a model with hundreds of
    MB of weights that is about a second each time. The size is the size of the model
    without those tensors' ``raw_data`` (:func:`onnxlint.tensors.dataless_copy`) plus, per
    tensor, the field and the growth of the length prefixes around it: exact, as protobuf's
    wire format fixes them. A left-out tensor with any other field than its name, type,
    dims and raw data is measured the ordinary way.
    """
    from onnxlint.tensors import dataless_copy

    light, left = dataless_copy(model)
    if not left:
        return int(model.ByteSize())
    if any(
        {fd.name for fd, _ in t.ListFields()} != _STUB_FIELDS or not t.HasField("data_type")
        for t in left.values()
    ):
        return int(model.ByteSize())
    growth = 0
    for stub in light.graph.initializer:
        original = left.get(stub.name)
        if original is None or stub.raw_data:
            continue
        stub_size = int(stub.ByteSize())
        n = len(original.raw_data)
        full = stub_size + 1 + _varint_len(n) + n  # raw_data is field 9: a one-byte tag
        growth += full - stub_size + _varint_len(full) - _varint_len(stub_size)
    graph = int(light.graph.ByteSize())
    return int(light.ByteSize()) + growth + _varint_len(graph + growth) - _varint_len(graph)

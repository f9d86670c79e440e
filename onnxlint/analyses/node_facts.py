"""The facts ORT's capability code sees for one node of a level graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from onnxlint.analyses.capability import NodeFacts
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.qdq_selectors import Q_LIMITS
from onnxlint.analyses.value_types import ValueType
from onnxlint.index import GRAPH_ATTRIBUTE_TYPES, GraphRef, NodeRef


def _attr_plain(a: onnx.AttributeProto) -> Any:
    if a.type in GRAPH_ATTRIBUTE_TYPES or a.type in (
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.TYPE_PROTO,
        onnx.AttributeProto.TYPE_PROTOS,
    ):
        return None
    try:
        v = onnx.helper.get_attribute_value(a)
    except ValueError:  # e.g. a ref_attr_name outside a function: value unknown
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    return v


#: (id of a schema, its formals' attribute, count) -> (the schema, its type params): the
#: same few answers for every node of an op; the schema is held so its id stays its own
#: the ops whose scale ``NodeFacts.nonfinite_scale`` reads
_QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})

_TYPE_PARAMS: dict[tuple[int, str, int], tuple[Any, tuple[str | None, ...]]] = {}
_TYPE_PARAMS_LIMIT = 10_000


def _type_params(schema: Any, formals_attr: str, count: int) -> tuple[str | None, ...]:
    if schema is None:
        return (None,) * count
    key = (id(schema), formals_attr, count)
    known = _TYPE_PARAMS.get(key)
    if known is None or known[0] is not schema:
        if len(_TYPE_PARAMS) >= _TYPE_PARAMS_LIMIT:
            _TYPE_PARAMS.clear()
        known = _TYPE_PARAMS[key] = (schema, _schema_type_params(schema, formals_attr, count))
    return known[1]


def _schema_type_params(schema: Any, formals_attr: str, count: int) -> tuple[str | None, ...]:
    formals = getattr(schema, formals_attr)
    if not formals:
        return (None,) * count
    names = {tc.type_param_str for tc in schema.type_constraints}
    out: list[str | None] = []
    for i in range(count):
        f = formals[min(i, len(formals) - 1)]
        out.append(f.type_str if f.type_str in names else None)
    return tuple(out)


def _dequantized_constant(lg: LevelGraph, g: GraphRef, name: str) -> bool:
    """``name`` is computed by a DequantizeLinear (any domain) of constants: initializers,
    Constant outputs, or a QuantizeLinear of those (a quantized constant, as
    onnxruntime.quantization writes a Pad's constant_value)."""

    def constant(value: str, quantized: bool) -> bool:
        if lg.is_initializer(g, value):
            return True
        q = g.producers.get(value) if quantized else None
        return (
            q is not None
            and q.op_type == "QuantizeLinear"
            and all(lg.is_initializer(g, i) for i in q.inputs if i)
        )

    p = g.producers.get(name)
    return (
        p is not None
        and p.op_type == "DequantizeLinear"
        and all(constant(i, k == 0) for k, i in enumerate(p.inputs) if i)
    )


#: one frozenset object per distinct set of slot positions: the facts of a large graph keep
#: six such sets each, nearly all of them the same few (empty, {0}, {1}...)
_SLOT_SETS: dict[tuple[int, ...], frozenset[int]] = {}
_SLOT_SETS_LIMIT = 10_000


def slot_set(slots: tuple[int, ...]) -> frozenset[int]:
    """``frozenset(slots)``, the same object for equal ``slots`` (sorted positions)."""
    got = _SLOT_SETS.get(slots)
    if got is None:
        if len(_SLOT_SETS) >= _SLOT_SETS_LIMIT:
            _SLOT_SETS.clear()
        got = _SLOT_SETS[slots] = frozenset(slots)
    return got


#: the type of an absent slot (read, never changed: ValueType is frozen)
_ABSENT = ValueType()

#: equal per-slot tuples (dtypes, shapes) of different nodes, one object each: most nodes of
#: a large graph repeat a few of them, and the facts of every node are kept for the whole
#: lint (28 MB of synth_100k's 90k facts were copies of equal tuples)
_TUPLES: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_TUPLES_LIMIT = 50_000
#: the attributes of a node without any (shared: facts are read, never changed)
_NO_ATTRIBUTES: dict[str, Any] = {}


def _shared(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values``, or an equal tuple made before (bounded: the table is emptied when full)."""
    got = _TUPLES.get(values)
    if got is None:
        if len(_TUPLES) >= _TUPLES_LIMIT:
            _TUPLES.clear()
        got = _TUPLES[values] = values
    return got


def node_facts(lg: LevelGraph, node: NodeRef, graph_node_count: int | None) -> NodeFacts:
    """NodeFacts for one node as ORT's capability code would see it."""
    g = node.graph
    # one pass over the inputs for the four slot sets: this runs for every node of the graph
    value_type = lg.value_type
    ins: list[ValueType] = []
    constant: list[int] = []
    dequantized: list[int] = []
    graph_inputs: list[int] = []
    absent: list[int] = []
    for i, n in enumerate(node.input_names):
        if not n:
            ins.append(_ABSENT)
            absent.append(i)
            continue
        ins.append(value_type(g, n))
        if lg.is_initializer(g, n):
            constant.append(i)
        if _dequantized_constant(lg, g, n):
            dequantized.append(i)
        if lg.is_graph_input(g, n):
            graph_inputs.append(i)
    known_values = lg.known_values.get(g.path) if lg.known_values else None
    known = (
        [i for i, n in enumerate(node.input_names) if n and n in known_values]
        if known_values
        else ()
    )
    out_names = node.output_names
    outs = [value_type(g, n) if n else _ABSENT for n in out_names]
    attribute = node.node.attribute
    attrs = {a.name: _attr_plain(a) for a in attribute} if attribute else _NO_ATTRIBUTES
    return NodeFacts(
        op_type=node.op_type,
        domain=node.domain,
        since_version=node.since_version,
        opset=node.opset,
        input_dtypes=_shared(tuple([v.dtype for v in ins])),
        output_dtypes=_shared(tuple([v.dtype for v in outs])),
        input_type_params=_type_params(node.schema, "inputs", len(ins)),
        output_type_params=_type_params(node.schema, "outputs", len(outs)),
        input_shapes=_shared(tuple([v.shape for v in ins])),
        output_shapes=_shared(tuple([v.shape for v in outs])),
        constant_inputs=slot_set(tuple(constant)),
        dequantized_inputs=slot_set(tuple(dequantized)),
        graph_inputs=slot_set(tuple(graph_inputs)),
        graph_outputs=slot_set(
            tuple([i for i, n in enumerate(out_names) if n and n in g.output_set])
        ),
        absent_inputs=slot_set(tuple(absent)),
        attributes=attrs,
        graph_node_count=graph_node_count,
        pad_room=_pad_room(lg, node, ins[0].shape if ins else None),
        index_room=_index_room(lg, node, ins[0].shape if ins else None),
        known_inputs=slot_set(tuple(known)),
        nonfinite_scale=_nonfinite_scale(lg, node),
        dequantized_scales=_dequantized_scales(lg, node),
    )


def _pad_room(lg: LevelGraph, node: NodeRef, data: tuple[Any, ...] | None) -> int | None:
    """``NodeFacts.pad_room`` of a Pad (opset 11 on: the pads are input 1); None for
    another op, pads that are not a constant, an axes input, or a data shape not static."""
    if node.op_type != "Pad" or node.domain != "ai.onnx" or (node.since_version or 0) < 11:
        return None
    names = node.input_names
    if len(names) < 2 or not names[1] or (len(names) > 3 and names[3]):
        return None
    if data is None or not all(isinstance(d, int) for d in data):
        return None
    pads = lg.int_constant(node.graph, names[1])
    rank = len(data)
    if pads is None or len(pads) != 2 * rank or rank == 0:
        return None
    return min(int(data[i % rank]) - 1 - p for i, p in enumerate(pads))


def _nonfinite_scale(lg: LevelGraph, node: NodeRef) -> bool:
    """``NodeFacts.nonfinite_scale``: a QuantizeLinear's or DequantizeLinear's scale is a
    small inline constant with an infinity or a NaN among its elements."""
    if node.op_type not in _QDQ_OPS or node.domain not in ("ai.onnx", "com.microsoft"):
        return False
    names = node.input_names
    if len(names) < 2 or not names[1]:
        return False
    values = lg.float_constant(node.graph, names[1])
    return values is not None and not bool(np.isfinite(values).all())


def _index_room(lg: LevelGraph, node: NodeRef, data: tuple[Any, ...] | None) -> int | None:
    """``NodeFacts.index_room`` of a Gather; None for another op, indices that are not a
    small constant, or a data dim on the axis that is not static."""
    if node.op_type != "Gather" or node.domain != "ai.onnx" or data is None:
        return None
    names = node.input_names
    if len(names) < 2 or not names[1]:
        return None
    a = node.attr("axis")
    axis = int(a.i) if a is not None else 0
    if not -len(data) <= axis < len(data):
        return None
    dim = data[axis]
    indices = lg.int_constant(node.graph, names[1])
    if not isinstance(dim, int) or not indices:
        return None
    return min(dim + i if i < 0 else dim - 1 - i for i in indices)


def _dequantized_scales(lg: LevelGraph, node: NodeRef) -> tuple[float, ...] | None:
    """``NodeFacts.dequantized_scales`` of a Resize (opset 11 on: scales are input 2)."""
    if node.op_type != "Resize" or node.domain != "ai.onnx" or (node.since_version or 0) < 11:
        return None
    names = node.input_names
    if len(names) < 3 or not names[2]:
        return None
    g = node.graph
    dq = g.producers.get(names[2])
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.inputs) < 2:
        return None
    scale = lg.float_constant(g, dq.inputs[1])
    zero_name = dq.inputs[2] if len(dq.inputs) > 2 else ""
    zero = lg.int_constant(g, zero_name) if zero_name else (0,)
    if scale is None or scale.size != 1 or not zero or len(zero) != 1:
        return None
    s = np.float32(scale.reshape(-1)[0])
    q = lg.int_constant(g, dq.inputs[0])
    if q is None:  # a QuantizeLinear of a float constant, with the same scale and zero point
        qn = g.producers.get(dq.inputs[0])
        if (
            qn is None
            or qn.op_type != "QuantizeLinear"
            or list(qn.inputs[1:3])
            != [
                dq.inputs[1],
                zero_name,
            ]
        ):
            return None
        c = lg.float_constant(g, qn.inputs[0])
        dtype = lg.value_type(g, dq.inputs[0]).dtype
        if c is None or dtype not in Q_LIMITS:
            return None
        lo, hi = Q_LIMITS[dtype]
        q = tuple(int(v) for v in np.clip(np.rint(c.astype(np.float32) / s) + zero[0], lo, hi))
    return tuple(float((np.float32(v - zero[0])) * s) for v in q)

"""NodeFacts of a single-node model (test models, probes, the profile tools): read from
the node's value infos instead of the lint's shared analyses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onnxlint.analyses.capability import NodeFacts, Shape
from onnxlint.analyses.op_revisions import revision_of
from onnxlint.analyses.shapes import dtype_name
from onnxlint.analyses.value_types import tensor_shape


def _value_type(vi: Any) -> tuple[str | None, Shape]:
    t = vi.type
    which = t.WhichOneof("value")
    if which != "tensor_type":
        if which == "sequence_type" and t.sequence_type.elem_type.HasField("tensor_type"):
            return dtype_name(t.sequence_type.elem_type.tensor_type.elem_type), None
        return None, None
    tt = t.tensor_type
    return dtype_name(tt.elem_type), tensor_shape(tt)


def facts_from_node(
    node: Any,
    value_infos: Sequence[Any] | Mapping[str, Any],
    *,
    opset: int | None = None,
    constant_names: frozenset[str] | set[str] = frozenset(),
    graph_input_names: frozenset[str] | set[str] = frozenset(),
    graph_output_names: frozenset[str] | set[str] = frozenset(),
    graph_node_count: int | None = None,
) -> NodeFacts:
    """Build :class:`NodeFacts` for one ``onnx.NodeProto`` from ``ValueInfoProto`` s.

    Meant for single-node test models (e.g. the ONNX backend node tests); the
    engine builds NodeFacts from its shared analyses instead. ``value_infos``
    may be a list of ValueInfoProto or a name -> ValueInfoProto mapping.
    """
    import onnx
    import onnx.helper

    from onnxlint.index import GRAPH_ATTRIBUTE_TYPES

    vis = (
        dict(value_infos)
        if isinstance(value_infos, Mapping)
        else {vi.name: vi for vi in value_infos}
    )
    domain = node.domain or "ai.onnx"
    since = revision_of(node.op_type, domain, opset) if opset is not None else None
    schema = None
    if opset is not None:
        try:
            d = "" if domain == "ai.onnx" else domain
            schema = onnx.defs.get_schema(node.op_type, opset, d)
        except Exception:
            schema = None

    def params(formals: Sequence[Any], count: int) -> tuple[str | None, ...]:
        if not formals:
            return (None,) * count
        out: list[str | None] = []
        assert schema is not None, "formals come from the schema, so there is one"
        constraint_names = {tc.type_param_str for tc in schema.type_constraints}
        for i in range(count):
            f = formals[min(i, len(formals) - 1)]
            out.append(f.type_str if f.type_str in constraint_names else None)
        return tuple(out)

    def io(names: Sequence[str]) -> tuple[tuple[str | None, ...], tuple[Shape, ...]]:
        dts: list[str | None] = []
        shapes: list[Shape] = []
        for n in names:
            if n and n in vis:
                d, s = _value_type(vis[n])
            else:
                d, s = None, None
            dts.append(d)
            shapes.append(s)
        return tuple(dts), tuple(shapes)

    in_dt, in_sh = io(node.input)
    out_dt, out_sh = io(node.output)
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR or a.type in GRAPH_ATTRIBUTE_TYPES:
            attrs[a.name] = None
            continue
        try:
            v = onnx.helper.get_attribute_value(a)
        except ValueError:  # e.g. a ref_attr_name outside a function: value unknown
            attrs[a.name] = None
            continue
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list):
            v = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
        attrs[a.name] = v
    return NodeFacts(
        op_type=node.op_type,
        domain=domain,
        since_version=since,
        opset=opset,
        input_dtypes=in_dt,
        output_dtypes=out_dt,
        input_type_params=params(schema.inputs if schema else [], len(node.input)),
        output_type_params=params(schema.outputs if schema else [], len(node.output)),
        input_shapes=in_sh,
        output_shapes=out_sh,
        constant_inputs=frozenset(i for i, n in enumerate(node.input) if n and n in constant_names),
        graph_inputs=frozenset(i for i, n in enumerate(node.input) if n and n in graph_input_names),
        graph_outputs=frozenset(
            i for i, n in enumerate(node.output) if n and n in graph_output_names
        ),
        absent_inputs=frozenset(i for i, n in enumerate(node.input) if not n),
        absent_outputs=frozenset(i for i, n in enumerate(node.output) if not n),
        attributes=attrs,
        graph_node_count=graph_node_count,
        name=node.name,
    )


def facts_from_model(model: Any, node_index: int = 0) -> NodeFacts:
    """NodeFacts for node ``node_index`` of a (single-node) ModelProto, after shape inference."""
    import onnx.shape_inference

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    g = inferred.graph
    node = g.node[node_index]
    wanted = {"", "ai.onnx"} if node.domain in ("", "ai.onnx") else {node.domain}
    opset = next((o.version for o in inferred.opset_import if o.domain in wanted), None)
    vis = [*g.input, *g.value_info, *g.output]
    inits = {t.name for t in g.initializer}
    consts = set(inits)
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            consts.update(n.output)
    graph_inputs = {i.name for i in g.input} - inits
    return facts_from_node(
        node,
        vis + [_vi_from_init(t) for t in g.initializer],
        opset=opset,
        constant_names=frozenset(consts),
        graph_input_names=frozenset(graph_inputs),
        graph_output_names=frozenset(o.name for o in g.output),
        # ORT turns Constant nodes into initializers before any EP sees the graph.
        graph_node_count=sum(1 for n in g.node if n.op_type != "Constant"),
    )


def _vi_from_init(t: Any) -> Any:
    import onnx.helper

    return onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))

"""Functions inlined and function ops expanded, as ORT does before it partitions."""

from __future__ import annotations

import onnx

from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.ort_kernels import cpu_has_kernel
from onnxlint.analyses.value_types import ValueType
from onnxlint.ep_names import CPU_EP
from onnxlint.index import ModelIndex


def inline_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """Model-local functions inlined, as ORT does before it partitions (a copy; else ``model``)."""
    if not model.functions:
        return model
    try:
        import onnx.inliner

        out = onnx.inliner.inline_local_functions(model)
    except Exception:
        out = model
    calls = {(f.domain, f.name) for f in model.functions}
    if any((n.domain, n.op_type) in calls for n in out.graph.node):
        # onnx's inliner leaves calls whose function imports another opset; ORT inlines them
        out = _inline_simple(out)
    return out


def _inline_simple(model: onnx.ModelProto, depth: int = 8) -> onnx.ModelProto:
    """Inline main-graph calls of local functions, renaming the function's inner values."""
    fns = {(f.domain, f.name): f for f in model.functions}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for _ in range(depth):
        nodes: list[onnx.NodeProto] = []
        changed = False
        for k, n in enumerate(out.graph.node):
            fn = fns.get((n.domain, n.op_type))
            if fn is None:
                nodes.append(n)
                continue
            changed = True
            nodes.extend(_instantiate(fn, n, f"{n.name or n.op_type + '_' + str(k)}/"))
        if not changed:
            break
        del out.graph.node[:]
        out.graph.node.extend(nodes)
    return out


#: the prefix of the values ORT's Graph::InlineFunction writes for an expanded function op
INLINED_PREFIX = "_inlfunc_"


def collapse_ort_inlined(model: onnx.ModelProto, source: ModelIndex) -> onnx.ModelProto:
    """``model`` (a graph ORT saved after partitioning) with each function op it inlined
    put back as the op (a copy; else ``model``).

    ORT's level-1 graph comes from a CPU session, which inlines every ONNX function op
    the CPU has no kernel for (GroupNormalization, Mish...) after level 1 has run; the
    session being predicted may have an EP that takes the op itself. The expanded nodes
    are found by their values (``_inlfunc_<Op>_...``) and replaced by the node of the
    user's model whose outputs they write; then the op is judged like any other
    (:func:`expand_unclaimed_function_ops` expands it again where no EP claims it)."""
    nodes = list(model.graph.node)
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    writer: dict[str, int] = {}
    marked = [
        i
        for i, n in enumerate(nodes)
        if any(v.startswith(INLINED_PREFIX) for v in (*n.input, *n.output))
    ]
    if not marked:
        return model
    for i in marked:
        for v in nodes[i].output:
            if v.startswith(INLINED_PREFIX):
                writer[v] = i
    for i in marked:
        for v in (*nodes[i].input, *nodes[i].output):
            j = writer.get(v)
            if j is not None and find(i) != find(j):
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in marked:
        groups.setdefault(find(i), []).append(i)
    by_output = {o: n for n in source.main.nodes for o in n.outputs if o}
    available = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    available |= {o for n in nodes for o in n.output}
    replace: dict[int, onnx.NodeProto | None] = {}
    for members in groups.values():
        outs = {
            o for i in members for o in nodes[i].output if o and not o.startswith(INLINED_PREFIX)
        }
        origin = {by_output.get(o) for o in outs}
        if len(origin) != 1:
            continue
        op = origin.pop()
        if (
            op is None
            # a model-local function is inlined before partitioning, whatever the EP
            or (op.node.domain, op.op_type) in source.functions
            or set(op.outputs) - {""} != outs
            or any(name and name not in available for name in op.inputs)
        ):
            continue
        for i in members:
            replace[i] = None
        # where the last of them was: after every producer of the op's inputs
        replace[max(members)] = op.node
    if not replace:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    kept: list[onnx.NodeProto] = []
    for i, n in enumerate(nodes):
        if i not in replace:
            kept.append(n)
        elif (node := replace[i]) is not None:
            kept.append(node)
    del out.graph.node[:]
    out.graph.node.extend(kept)
    return out


def expand_unclaimed_function_ops(
    lg: LevelGraph, la: LevelAssignment
) -> tuple[onnx.ModelProto, frozenset[int]] | None:
    """Expand main-graph ai.onnx ops that no EP claims into their ONNX function bodies.

    An operator defined as a function, such as Mish or GroupNormalization, runs as its
    body when no EP has a kernel for it. ORT inlines it after every EP has chosen its
    nodes, and then lets each EP choose again among the new ones (graph_partitioner.cc,
    ``PartitionOnnxFormatModel``'s loop); :func:`onnxlint.analyses.partition.plan_level`
    follows that order. Returns the expanded model and the positions of the expanded
    nodes in its main graph, or None when nothing is expanded.
    """
    import onnx.defs

    model = lg.model
    main = lg.index.main
    replace_at: dict[int, list[onnx.NodeProto]] = {}
    for node in main.nodes:
        na = la.get(node)
        if na is None or node.domain != "ai.onnx" or node.schema is None:
            continue
        # onnx's stubs lack OpSchema's function accessors (present at run time)
        if not (
            node.schema.has_function  # type: ignore[attr-defined]
            or node.schema.has_context_dependent_function  # type: ignore[attr-defined]
        ):
            continue
        # the CPU profile counts an expanded function op as claimed (it does run); what
        # decides is whether any EP in the list has a kernel for the op itself
        if any(v.claimed for v in na.verdicts if v.ep != CPU_EP) or cpu_has_kernel(
            node.op_type, node.since_version
        ):
            continue
        opset = node.opset
        schema = node.schema
        if schema is None or opset is None:
            continue
        fn = onnx.FunctionProto()
        try:
            # the function accessors are missing from onnx's stubs, not from OpSchema
            if schema.has_function:  # type: ignore[attr-defined]
                fn.ParseFromString(schema.get_function_with_opset_version(opset))  # type: ignore[attr-defined]
            elif schema.has_context_dependent_function:  # type: ignore[attr-defined]
                types = []
                for name in node.inputs:
                    vt = lg.value_type(main, name) if name else ValueType()
                    t = _type_proto(vt)
                    types.append(t.SerializeToString())
                fn.ParseFromString(
                    schema.get_context_dependent_function_with_opset_version(  # type: ignore[attr-defined]
                        opset, node.node.SerializeToString(), types
                    )
                )
            else:
                continue
        except Exception:
            continue
        if not fn.node:
            continue
        replace_at[node.index] = _instantiate(fn, node.node, f"{node.name or node.label}/")
    if not replace_at:
        return None
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes: list[onnx.NodeProto] = []
    expanded: set[int] = set()
    for i, n in enumerate(model.graph.node):
        body = replace_at.get(i)
        if body is None:
            nodes.append(n)
            continue
        expanded.update(range(len(nodes), len(nodes) + len(body)))
        nodes.extend(body)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, frozenset(expanded)


def _type_proto(vt: ValueType) -> onnx.TypeProto:
    elem = 0
    if vt.dtype:
        try:
            elem = onnx.TensorProto.DataType.Value(vt.dtype.upper())
        except ValueError:
            elem = 0
    shape = None
    if vt.shape is not None:
        shape = [d if isinstance(d, (int, str)) else None for d in vt.shape]
    return onnx.helper.make_tensor_type_proto(elem, shape)


def _instantiate(fn: onnx.FunctionProto, call: onnx.NodeProto, prefix: str) -> list[onnx.NodeProto]:
    """The function's nodes with its formal names bound to the call's values."""
    rename = dict(zip(fn.input, call.input, strict=False))
    rename.update(zip(fn.output, call.output, strict=False))
    attrs = {a.name: a for a in call.attribute}
    out: list[onnx.NodeProto] = []
    for inner in fn.node:
        m = onnx.NodeProto()
        m.CopyFrom(inner)
        m.name = prefix + (inner.name or f"{inner.op_type}_{len(out)}")
        m.input[:] = [rename.get(x, prefix + x) if x else "" for x in inner.input]
        m.output[:] = [rename.get(x, prefix + x) if x else "" for x in inner.output]
        kept = []
        for a in m.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attrs:
                    b = onnx.AttributeProto()
                    b.CopyFrom(attrs[a.ref_attr_name])
                    b.name = a.name
                    kept.append(b)
            else:
                kept.append(a)
        del m.attribute[:]
        m.attribute.extend(kept)
        out.append(m)
    return out

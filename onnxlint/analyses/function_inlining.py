"""Functions inlined and function ops expanded, as ORT does before it partitions."""

from __future__ import annotations

import onnx

from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.ort_kernels import cpu_has_kernel
from onnxlint.analyses.value_types import ValueType
from onnxlint.ep_names import CPU_EP


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


def expand_unclaimed_function_ops(lg: LevelGraph, la: LevelAssignment) -> onnx.ModelProto | None:
    """Expand main-graph ai.onnx ops that no EP claims into their ONNX function bodies.

    ORT does this before partitioning (an operator defined as a function, such as
    Mish or GroupNormalization, runs as its body when no EP has a kernel for it).
    Returns the expanded model, or None when nothing is expanded.
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
    for i, n in enumerate(model.graph.node):
        nodes.extend(replace_at.get(i, [n]))
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


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

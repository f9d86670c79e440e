"""Functions inlined and function ops expanded, as ORT does before it partitions."""

from __future__ import annotations

import onnx

from onnxlint.analyses.level_assignment import LevelAssignment, NodeAssignment
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.analyses.ort_contrib_schemas import CONTRIB_DOMAIN
from onnxlint.analyses.ort_kernels import cpu_contrib_kernel_for, cpu_has_kernel
from onnxlint.analyses.value_types import ValueType
from onnxlint.ep_names import CPU_EP
from onnxlint.index import ModelIndex, NodeRef, subgraphs


def inline_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """Model-local functions inlined as ORT inlines them on loading, before any EP chooses
    and at every optimization level (a copy; else ``model``).

    Round by round, as ORT's ahead-of-time inlining does: each round inlines every call
    in the graph in the order of ORT's node indices (a body's nodes are appended), and calls inside a body are inlined in the
    next round; the bodies of If, Loop and Scan are graphs of their own. Each call gets a
    prefix ``_inlfunc_<function>`` made unique in its graph as ORT's ``GenerateNodeName``
    makes it (``_token_<n>`` from one counter per graph), and its body's node names and
    inner values are that prefix, ``_`` and their own name: the names ORT reports."""
    if not model.functions:
        return model
    fns = {(f.domain, f.name): f for f in model.functions}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if not _inline_graph(out.graph, fns):
        return model
    imported = {o.domain for o in out.opset_import}
    for fn in model.functions:
        for o in fn.opset_import:
            if o.domain not in imported and (o.domain, fn.name) not in fns:
                out.opset_import.append(onnx.helper.make_opsetid(o.domain, o.version))
                imported.add(o.domain)
    return out


class _NodeNames:
    """ORT's ``Graph::GenerateNodeName`` for one graph: the base name if no node has it
    and it was not handed out, else ``<base>_token_<n>`` from the graph's counter."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.used = {n.name for n in graph.node}
        self.counter = 0

    def generate(self, base: str) -> str:
        name = base
        while name in self.used:
            name = f"{base}_token_{self.counter}"
            self.counter += 1
        self.used.add(name)
        return name


#: rounds of inlining at most (a function calling itself never ends)
_MAX_ROUNDS = 32


def _inline_graph(graph: onnx.GraphProto, fns: dict[tuple[str, str], onnx.FunctionProto]) -> bool:
    """Inline the calls of ``fns`` in ``graph`` and its bodies, in place; True if any.

    Every graph has its own names (``_NodeNames``), so a body is inlined on its own: the
    bodies the graph holds first, then the bodies of each round's inlined nodes; the
    graph's nodes are copied only when the graph itself holds a call."""
    changed = False
    for n in graph.node:
        for _, g in subgraphs(n):
            changed |= _inline_graph(g, fns)
    if not any((n.domain, n.op_type) in fns for n in graph.node):
        return changed
    names = _NodeNames(graph)
    placed: list[onnx.NodeProto] = []  # file order: each body where its call was
    for n in graph.node:
        own = onnx.NodeProto()
        own.CopyFrom(n)
        placed.append(own)
    # ORT's node indices: the graph's nodes, then each inlined body appended in turn
    by_index = list(placed)
    for _ in range(_MAX_ROUNDS):
        # ORT walks the graph's nodes by index (checked against its saved graphs: in a
        # round, the first call's body is named first)
        calls = [n for n in by_index if (n.domain, n.op_type) in fns]
        if not calls:
            break
        bodies: dict[int, list[onnx.NodeProto]] = {}
        for call in calls:
            prefix = names.generate(f"_inlfunc_{call.op_type}") + "_"
            body = _specialize(fns[(call.domain, call.op_type)], call, prefix)
            names.used.update(n.name for n in body)
            for m in body:
                for _, g in subgraphs(m):
                    _inline_graph(g, fns)
            bodies[id(call)] = body
        by_index = [n for n in by_index if id(n) not in bodies]
        for call in calls:
            by_index.extend(bodies[id(call)])
        placed = [m for n in placed for m in bodies.get(id(n), [n])]
    del graph.node[:]
    graph.node.extend(placed)
    return True


def _specialize(fn: onnx.FunctionProto, call: onnx.NodeProto, prefix: str) -> list[onnx.NodeProto]:
    """``fn``'s nodes for one call, renamed as ORT's function inliner renames them: the
    formal inputs and outputs become the call's values (a missing output gets
    ``prefix`` + its formal name), every other value and every node name gets ``prefix``
    (an empty name stays empty), attribute references take the call's attribute (else the
    function's default, else they are dropped)."""
    attrs = {a.name: a for a in fn.attribute_proto}
    attrs.update((a.name, a) for a in call.attribute)
    scopes: list[dict[str, str]] = [{}]
    top = scopes[0]
    for i, formal in enumerate(fn.input):
        top[formal] = call.input[i] if i < len(call.input) else ""
    for i, formal in enumerate(fn.output):
        actual = call.output[i] if i < len(call.output) else ""
        top[formal] = actual or prefix + formal

    def rename(name: str) -> str:
        if not name:
            return name
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        scopes[-1][name] = prefix + name
        return prefix + name

    def node(n: onnx.NodeProto) -> None:
        if n.name:
            n.name = prefix + n.name
        n.input[:] = [rename(x) for x in n.input]
        n.output[:] = [rename(y) for y in n.output]
        kept: list[onnx.AttributeProto] = []
        for a in n.attribute:
            b = onnx.AttributeProto()
            if a.ref_attr_name:
                given = attrs.get(a.ref_attr_name)
                if given is None:
                    continue
                b.CopyFrom(given)
                b.name = a.name
            else:
                b.CopyFrom(a)
            kept.append(b)
        del n.attribute[:]
        n.attribute.extend(kept)
        for _, g in subgraphs(n):
            body(g)

    def body(g: onnx.GraphProto) -> None:
        scopes.append({})
        for v in (*g.input, *g.output):
            scopes[-1][v.name] = prefix + v.name
            v.name = prefix + v.name
        for n in g.node:
            node(n)
        scopes.pop()

    out: list[onnx.NodeProto] = []
    for inner in fn.node:
        m = onnx.NodeProto()
        m.CopyFrom(inner)
        node(m)
        out.append(m)
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
    """Expand main-graph ops that no EP claims into their function bodies: ONNX's, and those
    of ORT's com.microsoft operators (``rules/ort_contrib_functions.json``).

    An operator defined as a function, such as Mish or GroupNormalization, runs as its
    body when no EP has a kernel for it (a float16 FastGelu: the CPU's kernel is float's).
    ORT inlines it after every EP has chosen its nodes, and then lets each EP choose again
    among the new ones (graph_partitioner.cc,
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
        if na is None:
            continue
        if node.domain == CONTRIB_DOMAIN:
            body = _contrib_body(lg, na, node)
            if body is not None:
                replace_at[node.index] = body
            continue
        if node.domain != "ai.onnx" or node.schema is None:
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


def _contrib_body(lg: LevelGraph, na: NodeAssignment, node: NodeRef) -> list[onnx.NodeProto] | None:
    """The nodes ORT inlines for ``node``, a com.microsoft operator with a function body
    (``rules/ort_contrib_functions.json``), when no EP in the list claims it and the CPU EP
    has no kernel for its input's element type; None otherwise (or when the type is
    unknown: ORT builds no body then either)."""
    from onnxlint.data import load_json

    spec = load_json("ort_contrib_functions.json")["functions"].get(node.op_type)
    if spec is None or (node.opset or 1) < spec["since"] or not node.inputs or not node.inputs[0]:
        return None
    if any(v.claimed for v in na.verdicts if v.ep != CPU_EP):
        return None
    vt = lg.value_type(lg.index.main, node.inputs[0])
    if not vt.dtype:
        return None
    if cpu_contrib_kernel_for(node.op_type, spec["type_constraint"], vt.dtype) is not False:
        return None  # a kernel runs it as it is (or ORT cannot tell)
    try:
        elem = onnx.TensorProto.DataType.Value(vt.dtype.upper())
    except ValueError:
        return None
    given = {formal for formal, actual in zip(spec["inputs"], node.inputs, strict=False) if actual}
    fn = onnx.FunctionProto()
    fn.input.extend(spec["inputs"][: len(node.inputs)])
    fn.output.extend(spec["outputs"])
    for name, value in spec["constants"].items():
        if isinstance(value, dict):  # an attribute's value, or its default
            attr = node.attr(value["attribute"])
            value = attr.f if attr is not None else value["default"]
        tensor = onnx.helper.make_tensor(name, elem, [], [float(value)])
        fn.node.append(onnx.helper.make_node("Constant", [], [name], value=tensor))
    for n in spec["nodes"]:
        if ("if_input" in n and n["if_input"] not in given) or n.get("unless_input") in given:
            continue
        fn.node.append(onnx.helper.make_node(n["op"], n["inputs"], n["outputs"]))
    return _instantiate(fn, node.node, f"{node.name or node.label}/")


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

"""The value types ORT resolves at session creation.

ORT's graph resolution does not propagate shape values the way ONNX's data propagation
does: :func:`infer_session_types` runs ONNX inference without it, counting a ``Shape`` of a
static tensor (and what is built from it) as the constant it is, leaving unknown what ORT
cannot resolve, and inferring ``com.microsoft`` ops through their ai.onnx twins.
"""

from __future__ import annotations

import onnx

from onnxlint.analyses.declared_merge import cut_value, merge_conflicts, restore_merged
from onnxlint.analyses.shape_values import CONCAT_PROPAGATES, constant_shapes, copy_node

#: rounds of "a Shape of a tensor that is now static is a constant" (a Reshape to the shape
#: of a Reshape's output needs two); each round is one inference pass without propagation
_SHAPE_ROUNDS = 4


def infer_session_types(
    model: onnx.ModelProto, cut: frozenset[str] = frozenset()
) -> onnx.ModelProto:
    """The model's types as ORT resolves them when it creates a session
    (:func:`infer_session_types_without_weights`, the weights put back)."""
    from onnxlint.tensors import restore_data

    return restore_data(*infer_session_types_without_weights(model, cut=cut))


def infer_session_types_without_weights(
    model: onnx.ModelProto,
    unpropagated: onnx.ModelProto | None = None,
    conflicts: bool = False,
    cut: frozenset[str] = frozenset(),
) -> tuple[onnx.ModelProto, dict[str, onnx.TensorProto]]:
    """The model's types as ORT resolves them when it creates a session; the answer's large
    initializers have no data, returned beside it by name (``tensors.restore_data``).

    Measured with ORT 1.32 and QNN's "Cannot get shape" (optimizations disabled): ORT's
    graph resolution knows the output of ``Reshape(x, Shape(y))`` when ``y`` is static,
    of ``Concat(Shape(a), Shape(b))`` (from Concat revision 13, opset 13, on), and of a
    Reshape or Slice whose shape or bounds are an element of a static Shape
    (``Unsqueeze(Gather(Shape(y), i))``), not of one whose shape is computed from
    ``Shape`` through Slice, arithmetic or a Concat with an initializer (ONNX's data
    propagation would find it). So this is ONNX inference
    without data propagation, in which a ``Shape`` of a static tensor, its Gathers and
    their Unsqueezes, and a Concat of those, count as the constants they are; that
    ``GreaterOrEqual``/``LessOrEqual`` revision 12 outputs stay unknown
    (:data:`_UNRESOLVED_SHAPE_OPS`); and ``com.microsoft`` Q/DQ, which ONNX
    has no schema for, infer as their ai.onnx twins (ORT's contrib schemas do the same).
    The inference runs on a copy whose nodes are then put back as they were; it never
    raises, and without propagation its memory is bounded by the graph.

    ``unpropagated``: ONNX's inference without data propagation of the model without its
    large weights' data, when the caller has it (the Shapes analysis's first pass). It is
    this function's first pass whenever no node needs a stand-in (the work copy is then
    that same model; a strict pass that succeeds answers as a lenient one), so that pass
    is not run again (it may then be the answer itself).

    ``conflicts``: a declaration contradicts inference (the Shapes analysis's strict pass
    said so); ORT's union of the two is applied first (:mod:`.declared_merge`). ``cut``:
    values whose declarations are such unions already (a graph ORT wrote), kept as declared.
    """
    from onnxlint.analyses.contrib_types import RULE_OPS, rules_for, used_rules
    from onnxlint.analyses.shapes import (
        collect_value_types,
        iter_graphs,
        strip_constant_declarations,
    )
    from onnxlint.tensors import dataless_copy, large_initializers

    if (
        unpropagated is not None
        and unpropagated is not model
        and not (conflicts or cut)
        and _first_pass_is_answer(model, unpropagated)
    ):
        # nothing below would change the work copy: the answer is the first pass, and the
        # copy (a whole model without its weights) need not be made
        return unpropagated, large_initializers(model)
    # the weights' values are not needed, and copying them was most of the time: the
    # work copy leaves large initializers' data behind, for the caller to put back if it
    # needs them (the small tensors that shape values come from are kept)
    work, left = dataless_copy(model)
    if work is model:
        work = onnx.ModelProto()
        work.CopyFrom(model)
    if work.ir_version < 4:
        # Below IR 4 ONNX only reads initializers that are also graph inputs; ORT's
        # optimized models keep the old IR version but drop the folded inputs.
        work.ir_version = 4
    # ORT types a Constant's output as its tensor, whatever the model declares (a first
    # pass handed in had the declarations it contradicts taken out already: _infer_source)
    strip_constant_declarations(work)
    drop_repeated_declarations(work)
    # ORT merges a contradicted declaration with what it infers: values cut out until the end
    cut_any = conflicts and merge_conflicts(work, used_rules(work))
    cut_any = any([cut_value(work.graph, name) for name in sorted(cut)]) or cut_any
    originals: dict[tuple[int, int], onnx.NodeProto] = {}
    # the values whose types ``shape_values.constant_shapes`` reads (a Shape's input, a Range's):
    # the table of every value of a large graph was most of this function's time
    read: set[str] = set()
    contrib: set[tuple[str, str]] = set()  # the nodes ORT's contrib schemas infer
    for gi, g in enumerate(iter_graphs(work.graph)):
        for ni, n in enumerate(g.node):
            op = n.op_type
            if op == "Shape" or op == "Range":
                read.update(n.input)
            elif op in RULE_OPS:
                contrib.add((n.domain, op))
            if _is_contrib_qdq(n):
                originals[(gi, ni)] = copy_node(n)
                n.domain = ""
            elif (twin := _contrib_twin(n)) is not None:
                originals[(gi, ni)] = copy_node(n)
                n.CopyFrom(twin)
            elif (unset := _unset_defaults(n)) is not None:
                originals[(gi, ni)] = copy_node(n)
                n.attribute.extend(unset)
    function_ops = {n.op_type for f in work.functions for n in f.node}
    rules = rules_for(contrib) | used_rules(work, function_ops)
    untouched = work.ir_version == model.ir_version
    hidden = set(_hide_unresolved_outputs(work, originals))
    stand_ins = bool(originals or hidden or cut_any) or not untouched
    if unpropagated is not None and unpropagated is not model and not stand_ins:
        inferred = unpropagated
    else:
        inferred = _lenient_infer(work, rules)
    values: dict[str, list[int]] = {}
    scalars: set[str] = set()
    for _ in range(_SHAPE_ROUNDS):
        table = collect_value_types(inferred, only=read)
        if not constant_shapes(work, table, originals, values, scalars):
            break
        inferred = _lenient_infer(work, rules)
    if originals:
        for gi, g in enumerate(iter_graphs(inferred.graph)):
            for ni in range(len(g.node)):
                if (gi, ni) in originals:
                    g.node[ni].CopyFrom(originals[(gi, ni)])
    if hidden:
        kept = [i for i in inferred.graph.input if i.name not in hidden]
        del inferred.graph.input[:]
        inferred.graph.input.extend(kept)
        for w in (work.graph, inferred.graph):
            kept_vi = [v for v in w.value_info if v.name not in hidden]
            del w.value_info[:]
            w.value_info.extend(kept_vi)
    if cut_any:
        restore_merged(inferred)
    return inferred, left


def _first_pass_is_answer(model: onnx.ModelProto, unpropagated: onnx.ModelProto) -> bool:
    """Whether :func:`infer_session_types_without_weights` answers ``unpropagated`` (ONNX's
    inference of ``model`` without propagation) as it is: the model needs no stand-in
    (IR 4 or later, no ``com.microsoft`` Q/DQ or op with a twin, no main-graph node of
    :data:`_UNRESOLVED_SHAPE_OPS` at its opset) and the first round of
    ``shape_values.constant_shapes`` changes nothing. Each later replacement in that round starts
    from a value an earlier one made, so the first is a ``Shape`` of a tensor the answer
    knows statically, or a ``Concat`` (from revision 13) whose inputs are all omitted."""
    from onnxlint.analyses.shapes import (
        collect_value_types,
        iter_graphs,
    )

    if model.ir_version < 4 or _repeats_declarations(model):
        return False
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    unresolved = {op for op, (low, high) in _UNRESOLVED_SHAPE_OPS.items() if low <= opset <= high}
    shaped: set[str] = set()
    for gi, g in enumerate(iter_graphs(model.graph)):
        for n in g.node:
            domain = n.domain
            if domain == "com.microsoft" and (
                n.op_type in _CONTRIB_QDQ or _contrib_twin(n) is not None
            ):
                return False
            if domain not in ("", "ai.onnx"):
                continue
            op = n.op_type
            if gi == 0 and op in unresolved:
                return False
            if op in _INFERENCE_DEFAULTS and _unset_defaults(n) is not None:
                return False
            if not n.output:
                continue
            if op == "Shape" and n.input:
                shaped.add(n.input[0])
            elif op == "Concat" and opset >= CONCAT_PROPAGATES and n.input and not any(n.input):
                return False
    table = collect_value_types(unpropagated, only=shaped)
    return not any(vt.is_static for vt in table.values())


def _repeats_declarations(model: onnx.ModelProto) -> bool:
    """Whether a graph of ``model`` declares one value in ``value_info`` more than once."""
    from onnxlint.analyses.shapes import iter_graphs

    for g in iter_graphs(model.graph):
        names = [vi.name for vi in g.value_info]
        if len(set(names)) != len(names):
            return True
    return False


def drop_repeated_declarations(model: onnx.ModelProto) -> None:
    """Keep, in place, the first ``value_info`` of each value of every graph.

    ORT's ``Graph`` makes one NodeArg per name from the first declaration and ignores the
    later ones; its inference then merges what it computes into that NodeArg, so a value
    declared with symbolic dims nine times (isbnx 0.0.18's detector) still gets the
    static shape that fixed input dims give it. ONNX's inference merges its answer into
    one of the copies and keeps the others as declared, which a reader taking the first
    would see (measured: ``tests/partition/test_repeated_value_info.py``)."""
    if not _repeats_declarations(model):
        return
    from onnxlint.analyses.shapes import iter_graphs

    for g in iter_graphs(model.graph):
        seen: set[str] = set()
        kept = []
        for vi in g.value_info:
            if vi.name not in seen:
                seen.add(vi.name)
                kept.append(vi)
        if len(kept) != len(g.value_info):
            del g.value_info[:]
            g.value_info.extend(kept)


#: op -> the ai.onnx opsets (revision 12: opsets 12 to 15) at which ORT infers no output
#: shape for it (only a declared one, e.g. a graph output's, stays), and its constant
#: folding leaves it in place even on constant inputs; QNN then refuses it and what
#: follows from it ("Cannot get shape"). Measured with ORT 1.32 on int64 and float
#: inputs, optimizations disabled and basic; from opset 16 (and for Greater, Less, Equal
#: at any opset) the output is inferred and a node of constants folds.
_UNRESOLVED_SHAPE_OPS: dict[str, tuple[int, int]] = {
    "GreaterOrEqual": (12, 15),
    "LessOrEqual": (12, 15),
}


#: op -> attributes whose schema default ONNX's shape inference does not apply when the
#: node leaves them unset (onnx 1.23.2: STFT's output has n_fft bins, not n_fft / 2 + 1,
#: though ``onesided`` defaults to 1); ORT's own inference and kernel use the default (an
#: STFT -> ReduceSumSquare -> MatMul by a [n_fft / 2 + 1, k] filter bank loads in ORT 1.32,
#: by a [n_fft, k] one it fails "Incompatible dimensions"). The inference's copy sets them.
_INFERENCE_DEFAULTS: dict[str, dict[str, int]] = {"STFT": {"onesided": 1}}


def _unset_defaults(node: onnx.NodeProto) -> list[onnx.AttributeProto] | None:
    """The attributes of :data:`_INFERENCE_DEFAULTS` that an ai.onnx ``node`` leaves unset,
    with their defaults; None when it sets them all (or is of another op)."""
    defaults = _INFERENCE_DEFAULTS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if not defaults:
        return None
    have = {a.name for a in node.attribute}
    unset = [onnx.helper.make_attribute(k, v) for k, v in defaults.items() if k not in have]
    return unset or None


def _hide_unresolved_outputs(
    work: onnx.ModelProto, originals: dict[tuple[int, int], onnx.NodeProto]
) -> list[str]:
    """Feed the main-graph nodes of :data:`_UNRESOLVED_SHAPE_OPS` from added graph inputs
    of unknown shape in ``work``, so inference leaves their outputs, and what follows from
    them, unknown (declared value_info stays, as in ORT). Returns the added input names
    (for the caller to remove after inference)."""
    g = work.graph
    opset = next((o.version for o in work.opset_import if o.domain in ("", "ai.onnx")), 0)
    if not any(low <= opset <= high for low, high in _UNRESOLVED_SHAPE_OPS.values()):
        return []  # no node to feed at this opset: the types below are not read
    types = {i.name: i.data_type for i in g.initializer}
    for v in (*g.input, *g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            value = next((a.t for a in n.attribute if a.name == "value"), None)
            types[n.output[0]] = value.data_type if value is not None else 0
    added: list[str] = []
    for ni, n in enumerate(g.node):
        low, high = _UNRESOLVED_SHAPE_OPS.get(n.op_type, (1, 0))
        if not low <= opset <= high or n.domain not in ("", "ai.onnx") or (0, ni) in originals:
            continue
        elem = next((types[i] for i in n.input if types.get(i)), onnx.TensorProto.FLOAT)
        originals[(0, ni)] = copy_node(n)
        for k, name in enumerate(n.input):
            if not name:
                continue
            fresh = f"onnxlint_unresolved_{ni}_{k}"
            vi = g.input.add()
            vi.name = fresh
            vi.type.tensor_type.elem_type = elem
            n.input[k] = fresh
            added.append(fresh)
    return added


def session_types_differ(model: onnx.ModelProto) -> bool:
    """Whether :func:`infer_session_types` can see other types than plain ONNX inference: the model
    computes shapes from values or holds com.microsoft Q/DQ or an op with an ai.onnx twin
    (:data:`_CONTRIB_TWINS`)."""
    from onnxlint.analyses.shapes import VALUE_SHAPED_OPS, iter_graphs

    return any(
        n.op_type in VALUE_SHAPED_OPS
        or n.op_type in _UNRESOLVED_SHAPE_OPS
        or _is_contrib_qdq(n)
        or (n.domain == "com.microsoft" and n.op_type in _CONTRIB_TWINS)
        for g in iter_graphs(model.graph)
        for n in g.node
    )


def _lenient_infer(
    model: onnx.ModelProto, rules: frozenset[tuple[str, str]] | None = None
) -> onnx.ModelProto:
    """One inference pass on ``model`` (already without its large weights' data), ORT's
    contrib operators inferred as ORT does (``analyses.contrib_types``; ``rules``: the ones
    the model uses, when known)."""
    from onnxlint.analyses.contrib_types import infer_shapes

    try:
        return infer_shapes(model, strict_mode=False, data_prop=False, rules=rules)
    except Exception:  # protobuf or checker errors on hostile models: keep what is declared
        return model


_CONTRIB_QDQ = ("QuantizeLinear", "DequantizeLinear")


def _is_contrib_qdq(node: onnx.NodeProto) -> bool:
    return node.domain == "com.microsoft" and node.op_type in _CONTRIB_QDQ


#: com.microsoft op -> (its ai.onnx twin, for each twin input the contrib input it takes,
#: or -1 for the contrib input 0 standing in, None for absent). ORT's contrib schema
#: infers the outputs as the twin's; ONNX has no schema for the contrib op, so without a
#: stand-in its outputs, and what follows from them, stay unknown. DynamicQuantizeLSTM
#: (contrib_ops quantization_defs): outputs as LSTM's, from X, ``hidden_size`` and
#: ``direction``; its quantized W and R (transposed, uint8/int8) are not read by LSTM's
#: shape function, X stands in for them so the twin's type constraint holds.
_CONTRIB_TWINS: dict[str, tuple[str, tuple[int | None, ...]]] = {
    "DynamicQuantizeLSTM": ("LSTM", (0, -1, -1, None, 4, 5, 6)),
}

#: attributes each twin accepts (others would fail its schema check)
_TWIN_ATTRIBUTES: dict[str, frozenset[str]] = {
    "LSTM": frozenset(
        {
            "activation_alpha",
            "activation_beta",
            "activations",
            "clip",
            "direction",
            "hidden_size",
            "input_forget",
        }
    ),
}


def _contrib_twin(node: onnx.NodeProto) -> onnx.NodeProto | None:
    """The ai.onnx stand-in that infers ``node``'s outputs as ORT does (see
    :data:`_CONTRIB_TWINS`); None when there is none or its attributes do not allow it."""
    spec = _CONTRIB_TWINS.get(node.op_type) if node.domain == "com.microsoft" else None
    if spec is None or not node.input or not any(a.name == "hidden_size" for a in node.attribute):
        return None  # without hidden_size the twin would read it from R's (other) layout
    op, picks = spec
    inputs = [
        "" if k is None or k >= len(node.input) else node.input[0 if k < 0 else k] for k in picks
    ]
    while inputs and not inputs[-1]:
        inputs.pop()
    twin = onnx.helper.make_node(op, inputs, list(node.output), name=node.name)
    allowed = _TWIN_ATTRIBUTES.get(op, frozenset())
    twin.attribute.extend(a for a in node.attribute if a.name in allowed)
    return twin

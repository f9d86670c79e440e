"""Patterns an EP fuses and so claims, although it refuses their nodes alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from onnxlint.analyses.constants import constant_array
from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.index import GraphRef, NodeRef


def _eps_fusing(result: LevelAssignment, fusion: str) -> list[str]:
    """The EPs whose profile lists ``fusion`` in ``fusions``.

    ``erf_gelu``: the EP fuses Div(x, c) (or Mul(x, 1/c)) -> Erf -> Add(., 1) and two Muls
    (by x and by 0.5, in the orders of :func:`_erf_gelu_nodes`) into Gelu and so takes an Erf it
    refuses alone. ``dynamic_quantize_matmul_integer`` / ``dynamic_quantize_conv_integer``:
    the EP claims a DynamicQuantizeLinear together with the MatMulIntegers / ConvIntegers
    reading its output (constant weights, every shape static) although it claims none of
    these ops alone. QNN HTP, measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (HTP
    simulator, soc_model 60): ORT's dynamic-quantization pattern (DynamicQuantizeLinear ->
    MatMulInteger or ConvInteger -> Cast -> Mul by Mul(scale, weight scale), then an
    optional Add of the bias) is taken at both levels with uint8 or int8 weights; the scale
    used without the weight scale's Mul, a DynamicQuantizeLinear alone, an Add that is the
    rescaling Mul's only reader and adds a computed tensor (a residual, or a bias that a
    Reshape writes, as the quantizer does for ConvInteger: constant only once the default
    level folds it), or an unknown or dynamic shape, is refused. An Add that shares the
    Mul's output with other readers does not matter.
    """
    return [p.ep for p in result.profiles if fusion in p.fusions]


def _static(shape: tuple[object, ...] | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


#: the fusions of a DynamicQuantizeLinear with the integer op reading it
_INTEGER_FUSIONS = {
    "dynamic_quantize_matmul_integer": "MatMulInteger",
    "dynamic_quantize_conv_integer": "ConvInteger",
}


def _dql_integer_users(result: LevelAssignment, dql: NodeRef, ops: frozenset[str]) -> list[NodeRef]:
    """The integer ops (of ``ops``: MatMulInteger, ConvInteger) fused with ``dql``, or []."""
    g = dql.graph
    users = g.consumers.get(dql.outputs[0], []) if dql.outputs else []
    if not users:
        return []
    for n in (dql, *users):
        na = result.nodes.get(n.path)
        if na is None or not all(
            _static(s) for s in (*na.facts.input_shapes, *na.facts.output_shapes)
        ):
            return []
        if n is dql:
            continue
        f = na.facts
        if (
            n.op_type not in ops
            or n.domain not in ("", "ai.onnx")
            or not n.inputs
            or n.inputs[0] != dql.outputs[0]
            or dql.outputs[0] in n.inputs[1:]
            or 1 not in f.constant_inputs
            or len(f.input_dtypes) < 2
            or f.input_dtypes[1] not in ("uint8", "int8")
            or not _rescaled_to_float(result, n, dql)
        ):
            return []
    return list(users)


def _rescaled_to_float(result: LevelAssignment, mmi: NodeRef, dql: NodeRef) -> bool:
    """Whether ``mmi``'s only use is Cast -> Mul by Mul(``dql``'s scale, a constant), as
    ORT's dynamic quantization writes it (QNN takes nothing else: with the scale used
    directly, both stay on CPU), and every Add reading that Mul adds a constant."""
    g = mmi.graph
    casts = g.consumers.get(mmi.outputs[0], []) if mmi.outputs else []
    if len(casts) != 1 or casts[0].op_type != "Cast" or not casts[0].outputs:
        return False
    for mul in g.consumers.get(casts[0].outputs[0], []):
        if mul.op_type != "Mul":
            continue
        for name in mul.inputs:
            scale = g.producers.get(name)
            na = result.nodes.get(scale.path) if scale is not None else None
            if scale is None or na is None or scale.op_type != "Mul" or len(scale.inputs) != 2:
                continue
            if len(dql.outputs) > 1 and dql.outputs[1] in scale.inputs:
                other = 1 - scale.inputs.index(dql.outputs[1])
                if other in na.facts.constant_inputs:
                    return _adds_constants(result, mul)
    return False


def _adds_constants(result: LevelAssignment, mul: NodeRef) -> bool:
    """Whether ``mul``'s output, when an Add is its only reader, is added to a constant
    (the bias): QNN then fuses the Add too and needs its bias constant. An Add that shares
    the output with other readers is not fused and decides nothing."""
    g = mul.graph
    readers = g.consumers.get(mul.outputs[0], []) if mul.outputs else []
    if len(readers) != 1 or readers[0].op_type != "Add" or len(readers[0].inputs) != 2:
        return True
    add = readers[0]
    na = result.nodes.get(add.path)
    other = 1 - add.inputs.index(mul.outputs[0])
    return na is not None and other in na.facts.constant_inputs


def apply_fusions(lg: LevelGraph, result: LevelAssignment) -> None:
    from dataclasses import replace

    integer_ops = {
        p.ep: frozenset(op for f, op in _INTEGER_FUSIONS.items() if f in p.fusions)
        for p in result.profiles
    }
    gelu_eps = _eps_fusing(result, "erf_gelu")
    dqd_eps = _eps_fusing(result, "dynamic_quantize_dequantize")
    if dqd_eps:
        _apply_dql_dequantize(result, dqd_eps)

    for na in list(result.nodes.values()):
        n = na.node
        if n.op_type != "DynamicQuantizeLinear" or n.domain not in ("", "ai.onnx"):
            continue
        for ep, ops in integer_ops.items():
            if not ops:
                continue
            users = _dql_integer_users(result, n, ops)
            na = result.nodes[n.path]
            group = [na, *(result.nodes[u.path] for u in users)] if users else []
            refused = [m.verdict_for(ep) for m in group]
            if not group or not all(
                v is not None and not v.claimed and v.kind == "op" for v in refused
            ):
                continue
            for m in group:
                why = f"{ep} fuses DynamicQuantizeLinear with the {users[0].op_type} reading it"
                result.nodes[m.node.path] = replace(
                    m,
                    verdicts=tuple(
                        replace(v, claimed=True, kind="supported", reason=why) if v.ep == ep else v
                        for v in m.verdicts
                    ),
                )
    rank6_eps = _eps_fusing(result, "rank6_to_rank5")
    if rank6_eps:
        _apply_rank6_fusion(result, rank6_eps, "Reshape", _rank6_to_rank5_nodes)
    gtr_eps = _eps_fusing(result, "gather_transpose_reshape")
    if gtr_eps:
        _apply_rank6_fusion(result, gtr_eps, "Gather", _gather_transpose_reshape_nodes)
    for na in list(result.nodes.values()):
        n = na.node
        if n.op_type != "Erf":
            continue
        pattern = _erf_gelu_nodes(n)
        if not pattern or not _gelu_ends_agree(pattern):
            continue
        verdicts = []
        for v in na.verdicts:
            # only an Erf refused for being Erf, in a pattern whose other nodes the EP takes
            others = [result.nodes.get(p.path) for p in pattern]
            fused = (
                v.ep in gelu_eps
                and not v.claimed
                and v.kind == "op"
                and all(o is not None and o.claims(v.ep) for o in others)
            )
            verdicts.append(
                replace(v, claimed=True, kind="supported", reason=f"{v.ep} fuses Erf into Gelu")
                if fused
                else v
            )
        result.nodes[n.path] = replace(na, verdicts=tuple(verdicts))


def _apply_dql_dequantize(result: LevelAssignment, eps: list[str]) -> None:
    """Claim, for ``eps`` (``dynamic_quantize_dequantize``), a DynamicQuantizeLinear and the
    one DequantizeLinear that reads its three outputs (and nothing else reads them), every
    shape static, when the EP refuses the first for its op and the second only for its
    computed scale and zero point: QNN HTP takes the pair (measured with onnxruntime 1.32.0
    + onnxruntime-qnn 2.7.0, HTP simulator, soc_model 60, both levels, before a MatMul or a
    Sigmoid; tf2onnx's conversion of a dynamic-range TFLite model writes it before each
    MatMul with an int8 weight)."""
    from dataclasses import replace

    for na in list(result.nodes.values()):
        dql = na.node
        if dql.op_type != "DynamicQuantizeLinear" or dql.domain not in ("", "ai.onnx"):
            continue
        g = dql.graph
        outs = list(dql.outputs)
        readers = {c.path: c for o in outs if o for c in g.consumers.get(o, [])}
        if len(outs) != 3 or len(readers) != 1 or set(outs) & set(g.outputs):
            continue
        dq = next(iter(readers.values()))
        if dq.op_type != "DequantizeLinear" or list(dq.inputs[:3]) != outs:
            continue
        pair = [result.nodes.get(dql.path), result.nodes.get(dq.path)]
        if any(
            m is None
            or not all(_static(x) for x in (*m.facts.input_shapes, *m.facts.output_shapes))
            for m in pair
        ):
            continue
        for ep in eps:
            v1, v2 = (m.verdict_for(ep) for m in pair if m is not None)
            if (
                v1 is None or v1.claimed or v1.kind != "op"
                or v2 is None or v2.claimed or v2.constraint != "constant_input"
            ):  # fmt: skip
                continue
            why = f"{ep} takes a DynamicQuantizeLinear with the DequantizeLinear of its outputs"
            for m in pair:
                assert m is not None
                m = result.nodes[m.node.path]
                result.nodes[m.node.path] = replace(
                    m,
                    verdicts=tuple(
                        replace(v, claimed=True, kind="supported", reason=why) if v.ep == ep else v
                        for v in m.verdicts
                    ),
                )


def _gelu_ends_agree(pattern: list[NodeRef]) -> bool:
    """Whether the Gelu of ``pattern`` (Div first) is quantized at both ends or at neither.

    QNN validates the fused Gelu with its input taken before a DequantizeLinear feeding the
    Div's ``x`` and its output after a QuantizeLinear that alone reads the last Mul
    (onnxruntime-qnn ``qnn_node_group/gelu_fusion.cc``); a Gelu from float to quantized, or
    from quantized to float, fails that validation and the Erf stays on the CPU. Measured
    with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (HTP simulator, soc_model 60), both
    levels: float Add -> pattern -> Q (a MatMul-only QDQ BERT) and DQ -> pattern -> Relu
    leave Erf on the CPU; DQ -> pattern -> Q and float -> pattern -> float are fused."""
    g = pattern[0].graph
    x = pattern[0].inputs[0]
    root = g.producers.get(x)
    quantized_in = root is not None and root.op_type == "DequantizeLinear"
    inside = {name for m in pattern for name in m.inputs}
    last = next((m for m in pattern if m.op_type == "Mul" and m.outputs[0] not in inside), None)
    if last is None:
        return False
    readers = g.consumers.get(last.outputs[0], [])
    quantized_out = len(readers) == 1 and readers[0].op_type == "QuantizeLinear"
    return quantized_in == quantized_out


def _erf_gelu_nodes(erf: NodeRef) -> list[NodeRef]:
    """The other nodes of the Gelu that ``erf`` is the middle of, or [] when no match.

    The forms QNN HTP fuses, measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0
    (HTP simulator, soc_model 60) on both graph levels; ``x`` is the Div's first input
    (or that of a Mul by the reciprocal, as TensorFlow's grappler and so tf2onnx write it;
    ``Mul(c, x)`` is not fused), and the constants' values (sqrt 2, 1, 0.5) are not what
    decides it:

    - ``Div(x, c) -> Erf -> Add -> Mul(., p)`` where ``p = Mul(x, .)``: the half taken
      first (the TorchScript exporter's usual order);
    - ``... -> Add -> Mul(x, .) -> Mul``: the half taken last;
    - ``... -> Add -> Mul(., c) -> Mul(x, .)``: the dynamo exporter's order.

    ``Mul(x, Add)`` with no second Mul is not fused: its Erf stays on the CPU.
    A copy of a DequantizeLinear writing ``x`` (ORT's ``/duplicated`` DQ for each node
    unit) writes ``x`` too: QNN compares the names without that suffix.
    """
    g = erf.graph
    div = g.producers.get(erf.inputs[0]) if erf.inputs else None
    if div is None or div.op_type not in ("Div", "Mul") or not div.inputs:
        return []
    x = _same_tensor(g, div.inputs[0])
    adds = g.consumers.get(erf.outputs[0], [])
    if len(adds) != 1 or adds[0].op_type != "Add":
        return []
    add = adds[0]
    for mul in g.consumers.get(add.outputs[0], []):
        if mul.op_type != "Mul":
            continue
        for name in mul.inputs:  # the half taken first: Mul(Mul(x, 0.5), add)
            p = g.producers.get(name)
            if p is not None and p is not add and p.op_type == "Mul" and x & set(p.inputs):
                return [div, add, mul, p]
        after = g.consumers.get(mul.outputs[0], []) if mul.outputs else []
        if len(after) != 1 or after[0].op_type != "Mul":
            continue
        if x & {*mul.inputs, *after[0].inputs}:  # the half last, or the dynamo order
            return [div, add, mul, after[0]]
    return []


def _same_tensor(g: GraphRef, name: str) -> set[str]:
    """``name`` and the outputs of every DequantizeLinear reading what the one writing
    ``name`` reads (ORT's copies of a DQ shared by two node units)."""
    dq = g.producers.get(name)
    if dq is None or dq.op_type != "DequantizeLinear":
        return {name}
    return {
        c.outputs[0]
        for c in g.consumers.get(dq.inputs[0], [])
        if c.op_type == "DequantizeLinear" and c.inputs == dq.inputs and c.outputs
    } | {name}


def _rank6_refused(v: Any) -> bool:
    """Whether verdict ``v`` refuses its node for a rank-6 tensor and for nothing else (the
    rank limit is the profile's last constraint, so nothing it checks comes after it)."""
    return v is not None and not v.claimed and v.constraint == "max_rank" and v.kind == "shape"


def _rank6_to_rank5_nodes(result: LevelAssignment, reshape1: NodeRef) -> list[NodeRef]:
    """``reshape1`` and the Transpose and Reshape after it when the three are the pattern
    QNN's Rank6ToRank5Fusion rewrites in rank 5, or [].

    onnxruntime-qnn ``qnn_node_group/reshape_transpose_rank5.cc``: Reshape -> Transpose ->
    Reshape, each output read by the next node alone and not a graph output (or, in a QDQ
    model, by a QuantizeLinear whose DequantizeLinear alone reads it: those two are in the
    group too), both shape inputs constant, the Reshape's and the Transpose's outputs of rank 6 and static, and
    the first index where both have a dim of 1 kept in place by the perm. Measured with
    onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (HTP simulator, soc_model 60), both levels:
    such a chain runs on HTP while any other node with a rank-6 tensor stays on the CPU.
    """
    g = reshape1.graph
    chain = [reshape1]
    between: list[NodeRef] = []
    for want in ("Transpose", "Reshape"):
        child = _single_reader(g, chain[-1])
        # a QDQ node unit: its QuantizeLinear, then the DequantizeLinear of the next unit
        if child is not None and child.op_type == "QuantizeLinear":
            dq = _single_reader(g, child)
            if dq is None or dq.op_type != "DequantizeLinear":
                return []
            between += [child, dq]
            child = _single_reader(g, dq)
        if child is None or child.op_type != want or child.domain not in ("", "ai.onnx"):
            return []
        chain.append(child)
    facts = [result.nodes.get(n.path) for n in chain]
    if any(f is None for f in facts) or any(result.nodes.get(n.path) is None for n in between):
        return []
    r1, tr, r2 = (f.facts for f in facts if f is not None)
    if 1 not in r1.constant_inputs or 1 not in r2.constant_inputs:
        return []
    t1 = r1.output_shapes[0] if r1.output_shapes else None
    t2 = tr.output_shapes[0] if tr.output_shapes else None
    if not (_static(t1) and _static(t2)) or t1 is None or t2 is None:
        return []
    if len(t1) != 6 or len(t2) != 6:
        return []
    unit = next((i for i in range(6) if t1[i] == 1 and t2[i] == 1), None)
    attr = chain[1].attr("perm")
    perm = list(attr.ints) if attr is not None else []
    if unit is None or len(perm) != 6 or perm[unit] != unit:
        return []
    return chain + between


def _single_reader(g: GraphRef, node: NodeRef) -> NodeRef | None:
    """The one node reading ``node``'s only output, or None (several readers, none, or
    the output is a graph output)."""
    if len(node.outputs) != 1 or node.outputs[0] in g.outputs:
        return None
    users = g.consumers.get(node.outputs[0], [])
    return users[0] if len(users) == 1 else None


def _gather_transpose_reshape_nodes(result: LevelAssignment, gather: NodeRef) -> list[NodeRef]:
    """``gather`` and the Transpose and Reshape after it when the three are the pattern
    QNN's GatherTransposeReshapeFusion rewrites in rank 4, or [].

    onnxruntime-qnn ``qnn_node_group/gather_transpose_reshape_fusion.cc``: a Gather (not in
    a QDQ unit) on axis 4 of a static rank-5 input, with constant rank-2 indices that
    number the whole axis row by row (``i * cols + j``) or column by column
    (``j * rows + i``), writing rank 6; its only reader a Transpose whose perm keeps dims
    0-2 and permutes 3-5; the Transpose's only reader a Reshape to a rank below 6 (the
    unfolding of MobileViT v2's dynamo export). Measured with onnxruntime 1.32.0 +
    onnxruntime-qnn 2.7.0 (HTP simulator, soc_model 60), both levels.
    """
    g = gather.graph
    transpose = _single_reader(g, gather)
    if transpose is None or transpose.op_type != "Transpose":
        return []
    reshape = _single_reader(g, transpose)
    if reshape is None or reshape.op_type != "Reshape":
        return []
    chain = [gather, transpose, reshape]
    if any(n.domain not in ("", "ai.onnx") for n in chain) or len(gather.inputs) < 2:
        return []
    facts = [result.nodes.get(n.path) for n in chain]
    if any(f is None for f in facts):
        return []
    ga, tr, rs = (f.facts for f in facts if f is not None)
    x = ga.input_shapes[0] if ga.input_shapes else None
    if not _static(x) or x is None or len(x) != 5 or any(d <= 0 for d in x):  # type: ignore[operator]
        return []
    attr = gather.attr("axis")
    axis = attr.i if attr is not None else 0
    if (axis + 5 if axis < 0 else axis) != 4:
        return []
    idx = constant_array(g, gather.inputs[1])
    if idx is None or idx.ndim != 2 or idx.dtype.kind not in "iu" or 0 in idx.shape:
        return []
    rows, cols = idx.shape
    if x[4] != rows * cols:
        return []
    import numpy as np

    i, j = np.indices((rows, cols))
    if not (np.array_equal(idx, i * cols + j) or np.array_equal(idx, j * rows + i)):
        return []
    out6 = [ga.output_shapes[0] if ga.output_shapes else None]
    out6.append(tr.output_shapes[0] if tr.output_shapes else None)
    if any(s is None or len(s) != 6 for s in out6):
        return []
    p = transpose.attr("perm")
    perm = list(p.ints) if p is not None else []
    if len(perm) != 6 or perm[:3] != [0, 1, 2] or sorted(perm[3:]) != [3, 4, 5]:
        return []
    out = rs.output_shapes[0] if rs.output_shapes else None
    if out is None or len(out) >= 6:
        return []
    return chain


def _apply_rank6_fusion(
    result: LevelAssignment,
    eps: list[str],
    first_op: str,
    match: Callable[[LevelAssignment, NodeRef], list[NodeRef]],
) -> None:
    """Claim for ``eps`` the node groups ``match`` finds from a ``first_op`` node, which
    QNN rewrites below rank 6, when the rank limit is their nodes' only refusal."""
    from dataclasses import replace

    for na in list(result.nodes.values()):
        n = na.node
        if n.op_type != first_op or n.domain not in ("", "ai.onnx"):
            continue
        chain = match(result, n)
        if not chain:
            continue
        group = [result.nodes[m.path] for m in chain]
        for ep in eps:
            verdicts = [m.verdict_for(ep) for m in group]
            if not any(_rank6_refused(v) for v in verdicts) or not all(
                v is not None and (v.claimed or _rank6_refused(v)) for v in verdicts
            ):
                continue
            why = f"{ep} fuses the {' -> '.join(m.op_type for m in chain[:3])} below rank 6"
            for i, m in enumerate(group):
                group[i] = replace(
                    m,
                    verdicts=tuple(
                        replace(v, claimed=True, kind="supported", reason=why, constraint=None)
                        if v.ep == ep and _rank6_refused(v)
                        else v
                        for v in m.verdicts
                    ),
                )
                result.nodes[m.node.path] = group[i]

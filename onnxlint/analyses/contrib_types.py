"""Type and shape inference for the operators ORT defines beyond ONNX, the way ORT's own
schemas infer them, lent to ONNX's shape inference for one call.

ONNX has no schema for ORT's contrib operators (``com.microsoft``: the fused ops ORT's
transformer optimizer writes, MatMulNBits, the QOperator ``QLinear*`` ops...) nor for
``SimplifiedLayerNormalization``, which ORT registers in the ``ai.onnx`` domain, nor for
ORT's own ``LayerNormalization`` (ai.onnx from version 1; ONNX's starts at opset 17). Its
inference leaves their outputs, and everything computed from them, without a type or a
shape, where ORT's graph resolution, which runs the inference functions of its contrib
schemas, knows both: a QNN prediction then refused every node downstream ("QNN needs
every tensor shape to be static") that the real session takes.

:func:`infer_shapes` is ``onnx.shape_inference.infer_shapes`` with, for the length of the
call, a schema in ONNX's registry for each such operator the model uses (none that ONNX
or anyone else registered already), whose inference function gives the outputs ORT's
schema gives. Each rule below was checked against the output types a CPU session of ORT
1.32 reports for the op's outputs (``tests/analyses/test_contrib_types.py``); outputs a
rule does not name (present key/value caches, for instance) stay unknown, as before. A
model that uses none of these operators is inferred exactly as before (one walk over its
nodes, nothing registered).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import onnx

from onnxlint.node_order import infer_sorted
from onnxlint.schema_registry import SCHEMAS_LOCK
from onnxlint.tensors import inline_array

#: (dims or None when the rank is unknown, element type or 0)
_Tensor = tuple[list[onnx.TensorShapeProto.Dimension] | None, int]
_Rule = Callable[[Any], None]

_FLOAT = onnx.TensorProto.FLOAT
_INT32 = onnx.TensorProto.INT32


def _input(ctx: Any, i: int) -> _Tensor | None:
    """Input ``i``'s dims and element type; None when it is absent or not a tensor."""
    if i >= ctx.get_num_inputs() or not ctx.has_input(i):
        return None
    tp = ctx.get_input_type(i)
    if tp is None or tp.WhichOneof("value") != "tensor_type":
        return None
    tt = tp.tensor_type
    dims = list(tt.shape.dim) if tt.HasField("shape") else None
    return dims, tt.elem_type


def _dim(value: int | None) -> onnx.TensorShapeProto.Dimension:
    d = onnx.TensorShapeProto.Dimension()
    if value is not None:
        d.dim_value = value
    return d


def _value(d: onnx.TensorShapeProto.Dimension) -> int | None:
    return int(d.dim_value) if d.HasField("dim_value") else None


def _set(ctx: Any, i: int, elem: int, dims: list[onnx.TensorShapeProto.Dimension] | None) -> None:
    if i >= ctx.get_num_outputs() or not ctx.has_output(i) or not elem:
        return
    tp = onnx.TypeProto()
    tp.tensor_type.elem_type = elem
    if dims is not None:
        shape = tp.tensor_type.shape
        shape.SetInParent()
        for d in dims:
            shape.dim.add().CopyFrom(d)
    ctx.set_output_type(i, tp)


def _attr_int(ctx: Any, name: str, default: int) -> int:
    a = ctx.get_attribute(name)
    return int(a.i) if a is not None else default


def _attr_ints(ctx: Any, name: str) -> list[int]:
    a = ctx.get_attribute(name)
    return [int(v) for v in a.ints] if a is not None else []


def _like_input0(ctx: Any) -> None:
    """Every listed output as input 0 (ORT: ``propagateShapeAndTypeFromFirstInput``)."""
    x = _input(ctx, 0)
    if x is not None:
        _set(ctx, 0, x[1], x[0])


def _reduced(dims: list[onnx.TensorShapeProto.Dimension] | None, axis: int) -> Any:
    """``dims`` with every dim from ``axis`` on set to 1 (a normalisation's statistics)."""
    if dims is None:
        return None
    rank = len(dims)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        return None
    return list(dims[:axis]) + [_dim(1) for _ in dims[axis:]]


def _skip_layer_norm(ctx: Any) -> None:
    """SkipLayerNormalization, SkipSimplifiedLayerNormalization: output and
    input_skip_bias_sum (3) as input 0; mean (1) and inv_std_var (2) float, input 0's
    shape with the last dim 1."""
    x = _input(ctx, 0)
    if x is None:
        return
    dims, elem = x
    _set(ctx, 0, elem, dims)
    _set(ctx, 1, _FLOAT, _reduced(dims, -1))
    _set(ctx, 2, _FLOAT, _reduced(dims, -1))
    _set(ctx, 3, elem, dims)


def _layer_norm(ctx: Any) -> None:
    """SimplifiedLayerNormalization (ai.onnx, ORT's kernel): Y as X; inv_std_var (1) of
    ``stash_type`` (float), X's shape with the dim at ``axis`` set to 1 (only that one:
    measured with ``axis=1`` on a rank-3 X)."""
    x = _input(ctx, 0)
    if x is None:
        return
    dims, elem = x
    _set(ctx, 0, elem, dims)
    stash = _attr_int(ctx, "stash_type", _FLOAT)
    inv = None
    if dims is not None:
        rank = len(dims)
        axis = _attr_int(ctx, "axis", -1)
        axis = axis + rank if axis < 0 else axis
        if 0 <= axis < rank:
            inv = [_dim(1) if i == axis else d for i, d in enumerate(dims)]
    _set(ctx, 1, stash, inv)


def _embed_layer_norm(ctx: Any) -> None:
    """EmbedLayerNormalization: output and embedding_sum (2) of word_embedding's type and
    shape (batch, sequence, hidden) from input_ids and word_embedding; mask_index (1)
    int32 (batch)."""
    ids, words = _input(ctx, 0), _input(ctx, 2)
    if ids is None or words is None:
        return
    batch_seq = list(ids[0]) if ids[0] is not None and len(ids[0]) == 2 else None
    hidden = words[0][1] if words[0] is not None and len(words[0]) == 2 else _dim(None)
    out = None if batch_seq is None else [*batch_seq, hidden]
    _set(ctx, 0, words[1], out)
    _set(ctx, 1, _INT32, None if batch_seq is None else batch_seq[:1])
    _set(ctx, 2, words[1], out)


def _q_embed_layer_norm(ctx: Any) -> None:
    """QEmbedLayerNormalization: layernorm_out float (batch, sequence, hidden), mask_index
    int32 (batch)."""
    ids, words = _input(ctx, 0), _input(ctx, 2)
    if ids is None or words is None:
        return
    batch_seq = list(ids[0]) if ids[0] is not None and len(ids[0]) == 2 else None
    hidden = words[0][1] if words[0] is not None and len(words[0]) == 2 else _dim(None)
    _set(ctx, 0, _FLOAT, None if batch_seq is None else [*batch_seq, hidden])
    _set(ctx, 1, _INT32, None if batch_seq is None else batch_seq[:1])


def _attention_out(ctx: Any, weights_input: int, elem: int) -> None:
    """Attention's output 0: (batch, sequence) of input 0 and the value hidden size:
    ``qkv_hidden_sizes[2]``, else a third of the weights' last dim."""
    x, w = _input(ctx, 0), _input(ctx, weights_input)
    if x is None or x[0] is None or len(x[0]) != 3:
        return
    sizes = _attr_ints(ctx, "qkv_hidden_sizes")
    if len(sizes) == 3:
        hidden = _dim(sizes[2])
    else:
        last = _value(w[0][-1]) if w is not None and w[0] else None
        hidden = _dim(last // 3 if last is not None and last % 3 == 0 else None)
    _set(ctx, 0, elem, [x[0][0], x[0][1], hidden])


def _attention(ctx: Any) -> None:
    """Attention: output (batch, sequence, v_hidden) of input 0's type."""
    x = _input(ctx, 0)
    if x is not None:
        _attention_out(ctx, 1, x[1])


def _q_attention(ctx: Any) -> None:
    """QAttention: output float (batch, sequence, v_hidden)."""
    _attention_out(ctx, 1, _FLOAT)


def _multi_head_attention(ctx: Any) -> None:
    """MultiHeadAttention: output (batch, sequence, v_hidden) of the query's type; v_hidden
    is the value's last dim (BSD value), heads x head size (BNSH value, packed KV key or
    packed QKV query)."""
    q = _input(ctx, 0)
    if q is None:
        return
    qd, elem = q
    if qd is None:
        return
    k, v = _input(ctx, 1), _input(ctx, 2)
    kd = k[0] if k is not None else None
    vd = v[0] if v is not None else None
    hidden: onnx.TensorShapeProto.Dimension | None = None
    if len(qd) == 5:  # packed QKV (batch, sequence, heads, 3, head size)
        hidden = _product(qd[2], qd[4])
    elif len(qd) == 3 and vd is not None and len(vd) == 3:
        hidden = vd[2]
    elif len(qd) == 3 and vd is not None and len(vd) == 4:
        hidden = _product(vd[1], vd[3])
    elif len(qd) == 3 and v is None and kd is not None and len(kd) == 5:
        hidden = _product(kd[2], kd[4])
    if hidden is None or len(qd) not in (3, 5):
        return
    _set(ctx, 0, elem, [qd[0], qd[1], hidden])


def _group_query_attention(ctx: Any) -> None:
    """GroupQueryAttention (ORT's ``BaseGroupQueryAttentionTypeAndShapeInference``): the
    output of the query's type, the query's shape when a value is given, else (packed QKV)
    (batch, sequence, heads x head size), head size the query's hidden size over
    ``num_heads + 2 * kv_num_heads``; the present key and value of the past key's type and
    shape (batch, kv heads, present length, head size), the present length the larger of
    the past's and a constant total length, else unknown (the past's shape with
    ``sliding_window_cache``). Checked against ORT 1.32's CPU sessions."""
    q = _input(ctx, 0)
    if q is None:
        return
    qd, elem = q
    value = _input(ctx, 2)
    if qd is not None and len(qd) == 3:
        if value is not None and value[0] is not None:
            _set(ctx, 0, elem, qd)
        else:
            heads, kv_heads = _attr_int(ctx, "num_heads", 0), _attr_int(ctx, "kv_num_heads", 0)
            hidden = _value(qd[2])
            size = None
            if hidden is not None and heads > 0 and heads + 2 * kv_heads > 0:
                size = hidden // (heads + 2 * kv_heads) * heads
            _set(ctx, 0, elem, [qd[0], qd[1], _dim(size)])
    else:
        _set(ctx, 0, elem, None)
    past = _input(ctx, 3)
    if past is None:  # the present as the query's type; ORT's prefill shapes are left out
        _set(ctx, 1, elem, None)
        _set(ctx, 2, elem, None)
        return
    pd, past_elem = past
    if pd is None or len(pd) != 4:
        _set(ctx, 1, past_elem, None)
        _set(ctx, 2, past_elem, None)
        return
    if _attr_int(ctx, "sliding_window_cache", 0) == 1:
        present = list(pd)
    else:
        # ORT 1.32 knows the present length only from a constant total length (measured:
        # a computed total, the builder's, leaves it unknown whatever the past's length)
        total = _constant_int(ctx, 6)
        past_len = _value(pd[2])
        known = total is not None and total > 0 and past_len is not None
        length = _dim(max(total, past_len) if known else None)  # type: ignore[type-var]
        present = [pd[0], pd[1], length, pd[3]]
    _set(ctx, 1, past_elem, present)
    _set(ctx, 2, past_elem, present)


def _constant_int(ctx: Any, i: int) -> int | None:
    """The first element of input ``i`` when it is a constant integer tensor."""
    if i >= ctx.get_num_inputs() or not ctx.has_input(i):
        return None
    data = ctx.get_input_data(i)
    if data is None:
        return None
    # never a file: external data is not opened (onnxlint.tensors decodes every value)
    arr = inline_array(data, max_elements=16)
    if arr is None or arr.dtype.kind not in "iu":
        return None
    values = arr.reshape(-1)
    return int(values[0]) if values.size else None


def _product(
    a: onnx.TensorShapeProto.Dimension, b: onnx.TensorShapeProto.Dimension
) -> onnx.TensorShapeProto.Dimension:
    va, vb = _value(a), _value(b)
    return _dim(va * vb if va is not None and vb is not None else None)


def _matmul_nbits(ctx: Any) -> None:
    """MatMulNBits: A's type, A's shape with the last dim ``N``."""
    a = _input(ctx, 0)
    n = ctx.get_attribute("N")
    if a is None or n is None:
        return
    dims = None if a[0] is None or not a[0] else [*a[0][:-1], _dim(int(n.i))]
    _set(ctx, 0, a[1], dims)


def _gather_block_quantized(ctx: Any) -> None:
    """GatherBlockQuantized: the scales' type; data's shape with ``gather_axis`` replaced by
    the indices' shape, data's last dim counted in elements (``8 / bits`` per uint8)."""
    data, indices, scales = _input(ctx, 0), _input(ctx, 1), _input(ctx, 2)
    if data is None or indices is None or scales is None:
        return
    dims: list[onnx.TensorShapeProto.Dimension] | None = None
    if data[0] is not None and indices[0] is not None and data[0]:
        rank = len(data[0])
        axis = _attr_int(ctx, "gather_axis", 0)
        axis = axis + rank if axis < 0 else axis
        if 0 <= axis < rank:
            shaped = list(data[0])
            if data[1] == onnx.TensorProto.UINT8:
                per_byte = 8 // max(1, _attr_int(ctx, "bits", 4))
                last = _value(shaped[-1])
                shaped[-1] = _dim(None if last is None else last * per_byte)
            dims = [*shaped[:axis], *indices[0], *shaped[axis + 1 :]]
    _set(ctx, 0, scales[1], dims)


def _broadcast(
    a: list[onnx.TensorShapeProto.Dimension] | None,
    b: list[onnx.TensorShapeProto.Dimension] | None,
) -> list[onnx.TensorShapeProto.Dimension] | None:
    """ONNX's multidirectional broadcast of two shapes (a dim nobody knows when the two
    differ and neither is 1)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a = [_dim(1)] * (rank - len(a)) + list(a)
    b = [_dim(1)] * (rank - len(b)) + list(b)
    out = []
    for da, db in zip(a, b, strict=True):
        va, vb = _value(da), _value(db)
        if va == 1:
            out.append(db)
        elif vb == 1 or da == db:
            out.append(da)
        elif va is not None and vb is not None:
            return None  # does not broadcast: ORT fails, nothing to infer
        else:
            out.append(da if va is not None else db if vb is not None else _dim(None))
    return out


def _qlinear_binary(ctx: Any) -> None:
    """QLinearAdd, QLinearMul: A's type, A (0) and B (3) broadcast."""
    a, b = _input(ctx, 0), _input(ctx, 3)
    if a is not None and b is not None:
        _set(ctx, 0, a[1], _broadcast(a[0], b[0]))


def _qlinear_concat(ctx: Any) -> None:
    """QLinearConcat (Y_scale, Y_zero_point, then X, scale, zero point per input): the
    inputs' type, their shapes concatenated along ``axis``."""
    xs = [_input(ctx, i) for i in range(2, ctx.get_num_inputs(), 3)]
    if not xs or any(x is None for x in xs):
        return
    tensors = [x for x in xs if x is not None]
    elem = tensors[0][1]
    shapes = [x[0] for x in tensors]
    if any(s is None for s in shapes) or len({len(s) for s in shapes if s is not None}) != 1:
        _set(ctx, 0, elem, None)
        return
    first = shapes[0]
    assert first is not None
    rank = len(first)
    axis = _attr_int(ctx, "axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return
    # a dim one input knows statically is that dim for all (the others must match it)
    out = [
        next((s[i] for s in shapes if s is not None and _value(s[i]) is not None), d)
        for i, d in enumerate(first)
    ]
    sizes = [_value(s[axis]) for s in shapes if s is not None]
    out[axis] = _dim(None if None in sizes else sum(v for v in sizes if v is not None))
    _set(ctx, 0, elem, out)


def _qgemm(ctx: Any) -> None:
    """QGemm: (M, N) from A (0) and B (3) after ``transA``/``transB``; of y_zero_point's
    type (8) when it quantizes its output, else float."""
    a, b = _input(ctx, 0), _input(ctx, 3)
    if a is None or b is None:
        return
    zp = _input(ctx, 8)
    if zp is not None:
        elem = zp[1]
    elif ctx.get_num_inputs() > 7 and ctx.has_input(7):
        return  # a y_scale without zero point: ORT's choice is not measured
    else:
        elem = _FLOAT
    dims = None
    if a[0] is not None and b[0] is not None and len(a[0]) == 2 and len(b[0]) == 2:
        m = a[0][1] if _attr_int(ctx, "transA", 0) else a[0][0]
        n = b[0][0] if _attr_int(ctx, "transB", 0) else b[0][1]
        dims = [m, n]
    _set(ctx, 0, elem, dims)


#: (domain, op) -> its inference rule; ``""`` is ai.onnx
RULES: dict[tuple[str, str], _Rule] = {
    ("com.microsoft", "Gelu"): _like_input0,
    ("com.microsoft", "FastGelu"): _like_input0,
    ("com.microsoft", "BiasGelu"): _like_input0,
    ("com.microsoft", "QuickGelu"): _like_input0,
    ("com.microsoft", "RotaryEmbedding"): _like_input0,
    ("com.microsoft", "SkipLayerNormalization"): _skip_layer_norm,
    ("com.microsoft", "SkipSimplifiedLayerNormalization"): _skip_layer_norm,
    ("", "SimplifiedLayerNormalization"): _layer_norm,
    # ORT's own LayerNormalization, registered in ai.onnx from version 1 before ONNX's
    # opset 17 (ORT's transformer optimizer writes it into models of any opset)
    ("", "LayerNormalization"): _like_input0,
    ("com.microsoft", "EmbedLayerNormalization"): _embed_layer_norm,
    ("com.microsoft", "QEmbedLayerNormalization"): _q_embed_layer_norm,
    ("com.microsoft", "Attention"): _attention,
    ("com.microsoft", "QAttention"): _q_attention,
    ("com.microsoft", "MultiHeadAttention"): _multi_head_attention,
    ("com.microsoft", "GroupQueryAttention"): _group_query_attention,
    ("com.microsoft", "MatMulNBits"): _matmul_nbits,
    ("com.microsoft", "GatherBlockQuantized"): _gather_block_quantized,
    ("com.microsoft", "QLinearAdd"): _qlinear_binary,
    ("com.microsoft", "QLinearMul"): _qlinear_binary,
    ("com.microsoft", "QLinearSoftmax"): _like_input0,
    ("com.microsoft", "QLinearSigmoid"): _like_input0,
    ("com.microsoft", "QLinearLeakyRelu"): _like_input0,
    ("com.microsoft", "QLinearConcat"): _qlinear_concat,
    ("com.microsoft", "QGemm"): _qgemm,
}

_STANDARD = ("", "ai.onnx")
_TENSOR_TYPES = sorted(
    f"tensor({name.lower()})"
    for name, code in onnx.TensorProto.DataType.items()
    if code not in (onnx.TensorProto.UNDEFINED,)
)


def _guarded(rule: _Rule) -> _Rule:
    """``rule``, never raising: ONNX would turn an exception into a failed inference."""

    def infer(ctx: Any) -> None:
        with contextlib.suppress(Exception):
            rule(ctx)

    return infer


def _schema(domain: str, op: str, rule: _Rule) -> onnx.defs.OpSchema:
    """A schema that takes any inputs, outputs and attributes (ORT's schema checks them;
    this one only infers)."""
    param = onnx.defs.OpSchema.FormalParameter
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    schema = onnx.defs.OpSchema(
        op,
        domain,
        1,
        inputs=[param("inputs", "T", "", param_option=variadic, is_homogeneous=False, min_arity=0)],
        outputs=[
            param("outputs", "T", "", param_option=variadic, is_homogeneous=False, min_arity=0)
        ],
        type_constraints=[("T", _TENSOR_TYPES, "")],
    )
    schema.set_type_and_shape_inference_function(_guarded(rule))
    return schema


#: every op name :data:`RULES` has (some are also ONNX ops in ai.onnx: Gelu, Attention...)
RULE_OPS = frozenset(op for _, op in RULES)

#: rules for ops ONNX defines only from a later opset than ORT does: their schema is
#: lent at version 1, below ONNX's first (a model importing ONNX's opset gets ONNX's)
BELOW_ONNX = frozenset({("", "LayerNormalization")})


def rules_for(pairs: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The (domain, op) of :data:`RULES` among ``pairs`` (a node's domain and op type)
    that ONNX has no schema for."""
    found: set[tuple[str, str]] = set()
    for domain, op in pairs:
        key = ("" if domain in _STANDARD else domain, op)
        if key in RULES and (key in BELOW_ONNX or not onnx.defs.has(op, key[0])):
            found.add(key)
    return frozenset(found)


def used_rules(
    model: onnx.ModelProto, op_types: Iterable[str] | None = None
) -> frozenset[tuple[str, str]]:
    """The rules ``model``'s graphs and functions use (:func:`rules_for`). ``op_types``:
    the op types of all its nodes, when the caller has them; a model with none of
    :data:`RULE_OPS` is then answered without a walk over its nodes."""
    from onnxlint.index import iter_graphs

    if op_types is not None and RULE_OPS.isdisjoint(op_types):
        return frozenset()
    nodes = [n for g in iter_graphs(model.graph) for n in g.node]
    nodes += [n for f in model.functions for n in f.node]
    return rules_for((n.domain, n.op_type) for n in nodes if n.op_type in RULE_OPS)


@contextlib.contextmanager
def _registered(keys: frozenset[tuple[str, str]]) -> Iterator[None]:
    with SCHEMAS_LOCK:
        done: list[tuple[str, str]] = []
        try:
            for domain, op in sorted(keys):
                if onnx.defs.has(op, 1, domain):
                    continue  # registered meanwhile by someone else: theirs stays
                onnx.defs.register_schema(_schema(domain, op, RULES[(domain, op)]))
                done.append((domain, op))
            yield
        finally:
            for domain, op in done:
                with contextlib.suppress(Exception):
                    onnx.defs.deregister_schema(op, 1, domain)


def missing_imports(model: onnx.ModelProto, rules: Iterable[tuple[str, str]]) -> list[str]:
    """The contrib domains ``rules`` need that ``model`` does not import."""
    imported = {o.domain for o in model.opset_import}
    return sorted({d for d, _ in rules if d} - imported)


def infer_shapes(
    source: onnx.ModelProto | bytes,
    *,
    strict_mode: bool,
    data_prop: bool,
    rules: frozenset[tuple[str, str]] | None = None,
) -> onnx.ModelProto:
    """``onnx.shape_inference.infer_shapes`` of ``source`` (a model or its bytes), ORT's
        contrib operators inferred as ORT infers them (see the module docstring). A contrib
        domain that a node uses and the model does not import is imported in a copy for the
        call (ORT mends a model the same way when it loads it; ONNX's inference would
        otherwise fail at that node) and left out of the answer again; bytes are handed to
        ONNX as they are (a caller checks :func:`missing_imports` first). ``rules``:
        :func:`used_rules` of the model, when the caller knows them (a caller that infers one
        model several times walks it once). A model whose nodes are out of topological order is
    inferred sorted (:func:`onnxlint.node_order.infer_sorted`); its bytes never are (a caller
    checks :func:`onnxlint.node_order.out_of_order` first). Raises what ONNX raises."""
    if isinstance(source, bytes):
        keys = rules if rules is not None else used_rules(onnx.ModelProto.FromString(source))
        if not keys:
            return onnx.shape_inference.infer_shapes(
                source, strict_mode=strict_mode, data_prop=data_prop
            )
        with _registered(keys):
            return onnx.shape_inference.infer_shapes(
                source, strict_mode=strict_mode, data_prop=data_prop
            )
    # a model whose nodes are out of order is inferred sorted, as ORT sorts it
    return infer_sorted(source, lambda m: _infer_model(m, strict_mode, data_prop, rules))


def _infer_model(
    model: onnx.ModelProto,
    strict_mode: bool,
    data_prop: bool,
    rules: frozenset[tuple[str, str]] | None,
) -> onnx.ModelProto:
    """:func:`infer_shapes` of a model whose nodes are in order."""
    keys = used_rules(model) if rules is None else rules
    if not keys:
        return onnx.shape_inference.infer_shapes(
            model, strict_mode=strict_mode, data_prop=data_prop
        )
    missing = missing_imports(model, keys)
    work = model
    if missing:
        work = onnx.ModelProto()
        work.CopyFrom(model)
        work.opset_import.extend(onnx.helper.make_opsetid(d, 1) for d in missing)
    with _registered(keys):
        inferred = onnx.shape_inference.infer_shapes(
            work, strict_mode=strict_mode, data_prop=data_prop
        )
    if missing:
        kept = [o for o in inferred.opset_import if o.domain not in missing]
        del inferred.opset_import[:]
        inferred.opset_import.extend(kept)
    return inferred

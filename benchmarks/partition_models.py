"""Hand-built models for the partition agreement measurement and the partition tests.

Transformer-style blocks in the forms exporters produce (static shapes, a
dynamic batch/sequence with Shape->Gather->Concat reshapes, a causal mask
built at run time, token embeddings), a QDQ-quantized conv stack, a Loop with
a fallback inside its body, and a chain of alternating supported/unsupported
nodes. Everything is built with ``onnx.helper``; nothing is downloaded.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR = 8


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list,
    outputs: list,
    inits: list,
    name: str,
    opset: int = OPSET,
) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR)
    return m


def _w(name: str, shape: tuple[int, ...], seed: int, dtype: type = np.float32) -> onnx.TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(dtype), name)


def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _f(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


def encoder_block(
    dynamic: bool, hidden: int = 64, heads: int = 4, seq: int = 16, embed: bool = False
) -> onnx.ModelProto:
    """One BERT-style encoder layer; ``dynamic`` uses symbolic batch/sequence dims."""
    head = hidden // heads
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    batch_dim: int | str = "batch" if dynamic else 1
    seq_dim: int | str = "sequence" if dynamic else seq
    if embed:
        inputs = [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch_dim, seq_dim])
        ]
        inits += [_w("word_emb", (100, hidden), 1), _w("pos_emb", (1, seq, hidden), 2)]
        nodes += [
            helper.make_node("Gather", ["word_emb", "input_ids"], ["tok"], name="embed_gather"),
            helper.make_node("Add", ["tok", "pos_emb"], ["x"], name="embed_add"),
        ]
    else:
        inputs = [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch_dim, seq_dim, hidden])
        ]
    inits += [
        _w("ln1_s", (hidden,), 3),
        _w("ln1_b", (hidden,), 4),
        _w("wq", (hidden, hidden), 5),
        _w("wk", (hidden, hidden), 6),
        _w("wv", (hidden, hidden), 7),
        _w("wo", (hidden, hidden), 8),
        _w("w1", (hidden, 4 * hidden), 9),
        _w("w2", (4 * hidden, hidden), 10),
        _w("ln2_s", (hidden,), 11),
        _w("ln2_b", (hidden,), 12),
        _f("scale", float(np.sqrt(head))),
        _f("half", 0.5),
        _f("one", 1.0),
        _f("sqrt2", float(np.sqrt(2.0))),
    ]
    nodes.append(
        helper.make_node("LayerNormalization", ["x", "ln1_s", "ln1_b"], ["h"], name="ln1", axis=-1)
    )
    for proj in ("q", "k", "v"):
        nodes.append(
            helper.make_node("MatMul", ["h", f"w{proj}"], [f"{proj}_lin"], name=f"{proj}_proj")
        )
    if dynamic:
        inits += [
            _i64("idx0", [0]),
            _i64("idx1", [1]),
            _i64("heads_head", [heads, head]),
            _i64("hid", [hidden]),
        ]
        nodes += [
            helper.make_node("Shape", ["h"], ["h_shape"], name="shape_h"),
            helper.make_node("Gather", ["h_shape", "idx0"], ["b"], name="gather_b", axis=0),
            helper.make_node("Gather", ["h_shape", "idx1"], ["s"], name="gather_s", axis=0),
            helper.make_node(
                "Concat", ["b", "s", "heads_head"], ["split_shape"], name="concat_split", axis=0
            ),
            helper.make_node(
                "Concat", ["b", "s", "hid"], ["merge_shape"], name="concat_merge", axis=0
            ),
        ]
        split, merge = "split_shape", "merge_shape"
    else:
        inits += [_i64("split_shape", [1, seq, heads, head]), _i64("merge_shape", [1, seq, hidden])]
        split, merge = "split_shape", "merge_shape"
    for proj, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [
            helper.make_node(
                "Reshape", [f"{proj}_lin", split], [f"{proj}_r"], name=f"{proj}_reshape"
            ),
            helper.make_node(
                "Transpose", [f"{proj}_r"], [f"{proj}_t"], name=f"{proj}_transpose", perm=perm
            ),
        ]
    nodes += [
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="qk"),
        helper.make_node("Div", ["scores", "scale"], ["scaled"], name="scale_div"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="pv"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", merge], ["ctx_m"], name="ctx_reshape"),
        helper.make_node("MatMul", ["ctx_m", "wo"], ["attn"], name="o_proj"),
        helper.make_node("Add", ["attn", "x"], ["res1"], name="residual1"),
        helper.make_node(
            "LayerNormalization", ["res1", "ln2_s", "ln2_b"], ["h2"], name="ln2", axis=-1
        ),
        helper.make_node("MatMul", ["h2", "w1"], ["ff1"], name="ff1"),
        # Gelu as exporters write it before opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
        helper.make_node("Div", ["ff1", "sqrt2"], ["g_div"], name="gelu_div"),
        helper.make_node("Erf", ["g_div"], ["g_erf"], name="gelu_erf"),
        helper.make_node("Add", ["g_erf", "one"], ["g_add"], name="gelu_add"),
        helper.make_node("Mul", ["ff1", "g_add"], ["g_mul"], name="gelu_mul"),
        helper.make_node("Mul", ["g_mul", "half"], ["gelu"], name="gelu_half"),
        helper.make_node("MatMul", ["gelu", "w2"], ["ff2"], name="ff2"),
        helper.make_node("Add", ["ff2", "res1"], ["y"], name="residual2"),
    ]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch_dim, seq_dim, hidden])
    name = f"encoder_{'dynamic' if dynamic else 'static'}{'_embed' if embed else ''}"
    return _model(nodes, inputs, [out], inits, name)


def causal_mask_block(seq: int = 8, hidden: int = 32) -> onnx.ModelProto:
    """A GPT-style causal mask computed from the input's shape (Shape->Range->Less->Where)."""
    inits = [
        _i64("zero", [0]),
        _i64("one_i", [1]),
        _i64("idx1", [1]),
        _w("w", (hidden, hidden), 3),
        _f("neg", -1e4),
        _f("zf", 0.0),
        _i64("ax0", [0]),
        _i64("ax1", [1]),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
        helper.make_node("Gather", ["xs", "idx1"], ["s1"], name="gather_seq", axis=0),
        helper.make_node("Squeeze", ["s1", "ax0"], ["s"], name="squeeze_seq"),
        helper.make_node("Squeeze", ["zero", "ax0"], ["z"], name="squeeze_zero"),
        helper.make_node("Squeeze", ["one_i", "ax0"], ["o"], name="squeeze_one"),
        helper.make_node("Range", ["z", "s", "o"], ["pos"], name="range"),
        helper.make_node("Unsqueeze", ["pos", "ax0"], ["row"], name="unsq_row"),
        helper.make_node("Unsqueeze", ["pos", "ax1"], ["col"], name="unsq_col"),
        helper.make_node("Less", ["col", "row"], ["future"], name="less"),
        helper.make_node("Where", ["future", "neg", "zf"], ["mask"], name="where"),
        helper.make_node("MatMul", ["h", "h_t"], ["scores"], name="scores"),
        helper.make_node("Transpose", ["h"], ["h_t"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("Add", ["scores", "mask"], ["masked"], name="add_mask"),
        helper.make_node("Softmax", ["masked"], ["y"], name="softmax", axis=-1),
    ]
    # keep the file in topological order
    nodes = [*nodes[:11], nodes[12], nodes[11], *nodes[13:]]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, seq])
    return _model(nodes, [x], [y], inits, "causal_mask")


def qdq_conv_stack(channels: int = 8, size: int = 16) -> onnx.ModelProto:
    """QuantizeLinear -> (DQ -> Conv -> Relu -> Q) x2 -> DQ: QDQ node units."""
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.uint8), "wzp"),
        numpy_helper.from_array(
            np.random.default_rng(0).integers(0, 255, (channels, 3, 3, 3)).astype(np.uint8), "w1q"
        ),
        numpy_helper.from_array(
            np.random.default_rng(1).integers(0, 255, (channels, channels, 3, 3)).astype(np.uint8),
            "w2q",
        ),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], name="q_in"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], name="dq_in"),
        helper.make_node("DequantizeLinear", ["w1q", "ws", "wzp"], ["w1"], name="dq_w1"),
        helper.make_node("Conv", ["xd", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c1", "s", "zp"], ["c1q"], name="q_c1"),
        helper.make_node("DequantizeLinear", ["c1q", "s", "zp"], ["c1d"], name="dq_c1"),
        helper.make_node("DequantizeLinear", ["w2q", "ws", "wzp"], ["w2"], name="dq_w2"),
        helper.make_node("Conv", ["c1d", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c2", "s", "zp"], ["c2q"], name="q_c2"),
        helper.make_node("DequantizeLinear", ["c2q", "s", "zp"], ["y"], name="dq_out"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, size, size])
    return _model(nodes, [x], [y], inits, "qdq_conv")


def alternating(n: int = 3) -> onnx.ModelProto:
    """Relu and Erf alternating: QNN claims Relu and refuses Erf (measured), so n+1 partitions."""
    nodes = []
    prev = "x"
    for i in range(n):
        nodes.append(helper.make_node("Relu", [prev], [f"r{i}"], name=f"relu{i}"))
        nodes.append(helper.make_node("Erf", [f"r{i}"], [f"e{i}"], name=f"erf{i}"))
        prev = f"e{i}"
    nodes.append(helper.make_node("Relu", [prev], ["y"], name=f"relu{n}"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    return _model(nodes, [x], [y], [], "alternating")


def loop_with_fallback(trips: int = 4) -> onnx.ModelProto:
    """A Loop whose body adds and applies Erf; the Loop itself is refused by QNN."""
    body_nodes = [
        helper.make_node("Add", ["acc_in", "x"], ["sum"], name="body_add"),
        helper.make_node("Erf", ["sum"], ["acc_out"], name="body_erf"),
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
    ]
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("iter", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, 16]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 16]),
        ],
    )
    inits = [
        numpy_helper.from_array(np.array(trips, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "cond"),
    ]
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], name="pre_relu"),
        helper.make_node("Loop", ["M", "cond", "x"], ["acc"], name="loop", body=body),
        helper.make_node("Relu", ["acc"], ["y"], name="post_relu"),
    ]
    x = helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    return _model(nodes, [x], [y], inits, "loop_fallback")


def transformer_blocks() -> list[tuple[str, onnx.ModelProto]]:
    models = [
        encoder_block(dynamic=False),
        encoder_block(dynamic=True),
        encoder_block(dynamic=False, embed=True),
        encoder_block(dynamic=True, embed=True),
        causal_mask_block(),
        qdq_conv_stack(),
        alternating(),
        loop_with_fallback(),
    ]
    return [(m.graph.name, m) for m in models]

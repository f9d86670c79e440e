"""A BERT-style TorchScript export built with onnx.helper: dynamic ``batch``/``sequence``,
torch's node names (``/bert/encoder/layer.0/attention/self/query/MatMul``), the shape
arithmetic the exporter writes for ``view``/``reshape`` (Shape -> Gather -> Unsqueeze ->
Concat -> Reshape), erf-based GELU and the mask arithmetic."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, FFN, VOCAB = 32, 2, 64, 100


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op: str, inputs: list[str], name: str, **attrs: object) -> str:
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def weight(self, shape: tuple[int, ...]) -> str:
        self._n += 1
        rng = np.random.default_rng(self._n)
        return self.const(
            f"onnx::MatMul_{self._n}", rng.standard_normal(shape).astype(np.float32) * 0.1
        )

    def layer_norm(self, x: str, scope: str) -> str:
        g = self.const(f"{scope}.weight", np.ones(HIDDEN, np.float32))
        b = self.const(f"{scope}.bias", np.zeros(HIDDEN, np.float32))
        return self.op(
            "LayerNormalization", [x, g, b], f"{scope}/LayerNormalization", axis=-1, epsilon=1e-12
        )

    def linear(self, x: str, scope: str, n_in: int, n_out: int) -> str:
        y = self.op("MatMul", [x, self.weight((n_in, n_out))], f"{scope}/MatMul")
        b = self.const(f"{scope}.bias", np.zeros(n_out, np.float32))
        return self.op("Add", [b, y], f"{scope}/Add")

    def heads_shape(self, x: str, scope: str) -> str:
        """torch's ``x.view(x.size(0), x.size(1), HEADS, -1)`` as exported."""
        shape = self.op("Shape", [x], f"{scope}/Shape")
        dims = []
        for k in (0, 1):
            idx = self.const(f"{scope}/Constant_{k}", np.array(k, np.int64))
            g = self.op("Gather", [shape, idx], f"{scope}/Gather_{k}", axis=0)
            axes = self.const(f"{scope}/Constant_axes_{k}", np.array([0], np.int64))
            dims.append(self.op("Unsqueeze", [g, axes], f"{scope}/Unsqueeze_{k}"))
        rest = self.const(f"{scope}/Constant_rest", np.array([HEADS, HIDDEN // HEADS], np.int64))
        return self.op("Concat", [*dims, rest], f"{scope}/Concat", axis=0)


def bert_like(layers: int = 2) -> onnx.ModelProto:
    b = _Builder()
    emb = b.const("bert.embeddings.word_embeddings.weight", np.zeros((VOCAB, HIDDEN), np.float32))
    x = b.op("Gather", [emb, "input_ids"], "/bert/embeddings/word_embeddings/Gather")
    x = b.layer_norm(x, "/bert/embeddings/LayerNorm")
    # the mask: (1 - mask[:, None, None, :]) * -10000
    m = b.op(
        "Unsqueeze",
        ["attention_mask", b.const("/bert/Constant_axes", np.array([1, 2], np.int64))],
        "/bert/Unsqueeze",
    )
    m = b.op("Cast", [m], "/bert/Cast", to=TensorProto.FLOAT)
    m = b.op("Sub", [b.const("/bert/Constant_one", np.array(1.0, np.float32)), m], "/bert/Sub")
    mask = b.op(
        "Mul", [m, b.const("/bert/Constant_big", np.array(-10000.0, np.float32))], "/bert/Mul"
    )
    for i in range(layers):
        s = f"/bert/encoder/layer.{i}"
        q, k, v = (
            b.linear(x, f"{s}/attention/self/{n}", HIDDEN, HIDDEN)
            for n in ("query", "key", "value")
        )
        heads = []
        for n, t in (("query", q), ("key", k), ("value", v)):
            shp = b.heads_shape(t, f"{s}/attention/self/{n}")
            r = b.op("Reshape", [t, shp], f"{s}/attention/self/{n}/Reshape")
            perm = [0, 2, 3, 1] if n == "key" else [0, 2, 1, 3]
            heads.append(b.op("Transpose", [r], f"{s}/attention/self/{n}/Transpose", perm=perm))
        scores = b.op("MatMul", [heads[0], heads[1]], f"{s}/attention/self/MatMul")
        scale = b.const(
            f"{s}/attention/self/Constant_scale", np.array(np.sqrt(HIDDEN // HEADS), np.float32)
        )
        scores = b.op("Div", [scores, scale], f"{s}/attention/self/Div")
        scores = b.op("Add", [scores, mask], f"{s}/attention/self/Add")
        probs = b.op("Softmax", [scores], f"{s}/attention/self/Softmax", axis=-1)
        ctx = b.op("MatMul", [probs, heads[2]], f"{s}/attention/self/MatMul_1")
        ctx = b.op("Transpose", [ctx], f"{s}/attention/self/Transpose", perm=[0, 2, 1, 3])
        shape = b.op("Shape", [x], f"{s}/attention/self/Shape")
        g2 = b.op(
            "Slice",
            [
                shape,
                b.const(f"{s}/attention/self/C0", np.array([0], np.int64)),
                b.const(f"{s}/attention/self/C2", np.array([2], np.int64)),
            ],
            f"{s}/attention/self/Slice",
        )
        new_shape = b.op(
            "Concat",
            [g2, b.const(f"{s}/attention/self/Chid", np.array([HIDDEN], np.int64))],
            f"{s}/attention/self/Concat",
            axis=0,
        )
        ctx = b.op("Reshape", [ctx, new_shape], f"{s}/attention/self/Reshape")
        out = b.linear(ctx, f"{s}/attention/output/dense", HIDDEN, HIDDEN)
        out = b.op("Add", [out, x], f"{s}/attention/output/Add")
        x = b.layer_norm(out, f"{s}/attention/output/LayerNorm")
        h = b.linear(x, f"{s}/intermediate/dense", HIDDEN, FFN)
        # GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        g = b.op(
            "Div",
            [h, b.const(f"{s}/intermediate/Constant_sqrt2", np.array(np.sqrt(2), np.float32))],
            f"{s}/intermediate/intermediate_act_fn/Div",
        )
        g = b.op("Erf", [g], f"{s}/intermediate/intermediate_act_fn/Erf")
        g = b.op(
            "Add",
            [g, b.const(f"{s}/intermediate/Constant_1", np.array(1.0, np.float32))],
            f"{s}/intermediate/intermediate_act_fn/Add",
        )
        g = b.op("Mul", [h, g], f"{s}/intermediate/intermediate_act_fn/Mul")
        g = b.op(
            "Mul",
            [g, b.const(f"{s}/intermediate/Constant_half", np.array(0.5, np.float32))],
            f"{s}/intermediate/intermediate_act_fn/Mul_1",
        )
        o = b.linear(g, f"{s}/output/dense", FFN, HIDDEN)
        o = b.op("Add", [o, x], f"{s}/output/Add")
        x = b.layer_norm(o, f"{s}/output/LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity"))
    graph = helper.make_graph(
        b.nodes,
        "main_graph",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(
                "attention_mask", TensorProto.INT64, ["batch", "sequence"]
            ),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN]
            )
        ],
        initializer=b.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
        producer_name="pytorch",
        producer_version="2.13.0",
    )
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    import sys

    onnx.save(bert_like(int(sys.argv[2]) if len(sys.argv) > 2 else 2), sys.argv[1])

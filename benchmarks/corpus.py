"""The benchmark corpus, generated on this machine: nothing is downloaded or committed.

- the onnx wheel's light models (``onnx/backend/test/data/light``), used in place;
- ``bert_base``: a 12-layer BERT-base-sized encoder (hidden 768, 12 heads, FFN 3072,
  vocabulary 30522, symbolic batch and sequence) built with ``onnx.helper`` in the
  form the torch exporter writes at opset 17, random weights (about 440 MB inline);
- ``synth_1k`` / ``synth_10k`` / ``synth_100k``: graphs of about 1,000, 10,000 and
  100,000 nodes (subgraph nodes included) with a transformer/CNN op mix, Shape
  chains feeding Reshape, If nodes and Loops whose bodies hold another If, over
  ``[batch, seq, 64]`` activations with symbolic dims. Weights come from a pool of
  64x64 matrices shared by many nodes so the files stay small;
- ``external_4gb``: 16 MatMuls over 8192x8192 float32 weights (4 GiB) kept in an
  external data file created sparse with ``os.truncate``: the size is real to
  anything that reads it, the disk holds nothing.

Files land in a cache folder outside the repository (``--cache``, default
``$XDG_CACHE_HOME/onnxlint-bench``) and are rebuilt when missing or when
``CORPUS_VERSION`` changes. Every generated model passes
``onnx.checker.check_model(full_check=True)``, so the floor peer can run on it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.level1.eligibility import count_nodes
from onnxlint.fsutil import atomic_write_bytes

#: bump when a generator changes, so stale cached files are rebuilt
CORPUS_VERSION = 3
OPSET = 17
IR = 8
HIDDEN = 64
#: one top-level block in this many is an If or a Loop
CONTROL_EVERY = 100
#: share of 1-D convolutions (a transformer-heavy mix; ORT prepacks every Conv's weights
#: at session creation, which made a conv-heavy 10k graph take over a minute to load)
CONV_SHARE = 0.02


@dataclass(frozen=True)
class CorpusModel:
    """One model of the corpus: where it is, how big, where it came from."""

    name: str
    path: Path
    nodes: int
    origin: str
    external_bytes: int = 0


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onnxlint-bench"


def light_dir() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


# -- BERT-base ----------------------------------------------------------------------------


class _Builder:
    """Nodes and initializers with exporter-style names (``/layer.3/attn/MatMul``)."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self._n = 0

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        data = self.rng.standard_normal(shape, dtype=np.float32)
        data *= scale
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def op(
        self, op_type: str, inputs: list[str], scope: str, n_out: int = 1, **attrs: object
    ) -> str:
        self._n += 1
        outs = [f"{scope}/{op_type}_{self._n}_output_{i}" for i in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outs, name=f"{scope}/{op_type}_{self._n}", **attrs)
        )
        return outs[0]


def bert_base(
    layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072
) -> onnx.ModelProto:
    """A BERT-base-sized encoder as the torch exporter writes it (opset 17, erf Gelu)."""
    b = _Builder(seed=12)
    head = hidden // heads
    b.const("heads_shape", np.array([0, 0, heads, head], dtype=np.int64))
    b.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    b.const("one", np.array(1.0, dtype=np.float32))
    b.const("half", np.array(0.5, dtype=np.float32))
    b.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    b.const("scale", np.array(np.sqrt(head), dtype=np.float32))
    b.const("neg", np.array(-10000.0, dtype=np.float32))
    b.const("axes_1_2", np.array([1, 2], dtype=np.int64))
    b.const("zero_i", np.array([0], dtype=np.int64))
    b.const("one_i", np.array([1], dtype=np.int64))
    b.weight("word_emb", (30522, hidden))
    b.weight("pos_emb", (512, hidden))
    b.weight("emb_ln_g", (hidden,), 1.0)
    b.weight("emb_ln_b", (hidden,))
    s = "/embeddings"
    shape = b.op("Shape", ["input_ids"], s)
    seq_len = b.op("Gather", [shape, "one_i"], s)
    pos = b.op("Slice", ["pos_emb", "zero_i", seq_len, "zero_i"], s)
    tok = b.op("Gather", ["word_emb", "input_ids"], s)
    x = b.op("Add", [tok, pos], s)
    x = b.op("LayerNormalization", [x, "emb_ln_g", "emb_ln_b"], s, axis=-1, epsilon=1e-12)
    m = b.op("Unsqueeze", ["attention_mask", "axes_1_2"], "/mask")
    m = b.op("Cast", [m], "/mask", to=TensorProto.FLOAT)
    m = b.op("Sub", ["one", m], "/mask")
    mask = b.op("Mul", [m, "neg"], "/mask")
    for i in range(layers):
        s = f"/encoder/layer.{i}"

        def linear(inp: str, n_in: int, n_out: int, tag: str, scope: str = s) -> str:
            w = b.weight(f"{scope}/{tag}.weight", (n_in, n_out))
            bias = b.weight(f"{scope}/{tag}.bias", (n_out,))
            return b.op("Add", [b.op("MatMul", [inp, w], scope), bias], scope)

        def split_heads(t: str, perm: list[int], s: str = s) -> str:
            return b.op("Transpose", [b.op("Reshape", [t, "heads_shape"], s)], s, perm=perm)

        q = split_heads(linear(x, hidden, hidden, "query"), [0, 2, 1, 3])
        k = split_heads(linear(x, hidden, hidden, "key"), [0, 2, 3, 1])
        v = split_heads(linear(x, hidden, hidden, "value"), [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k], s), "scale"], s)
        probs = b.op("Softmax", [b.op("Add", [scores, mask], s)], s, axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], s)], s, perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, "hidden_shape"], s)
        attn = b.op("Add", [linear(ctx, hidden, hidden, "attn_out"), x], s)
        g1 = b.weight(f"{s}/ln1.weight", (hidden,), 1.0)
        b1 = b.weight(f"{s}/ln1.bias", (hidden,))
        x = b.op("LayerNormalization", [attn, g1, b1], s, axis=-1, epsilon=1e-12)
        h = linear(x, hidden, ffn, "intermediate")
        erf = b.op("Erf", [b.op("Div", [h, "sqrt2"], s)], s)
        h = b.op("Mul", [b.op("Mul", [h, b.op("Add", [erf, "one"], s)], s), "half"], s)
        out = b.op("Add", [linear(h, ffn, hidden, "output"), x], s)
        g2 = b.weight(f"{s}/ln2.weight", (hidden,), 1.0)
        b2 = b.weight(f"{s}/ln2.bias", (hidden,))
        x = b.op("LayerNormalization", [out, g2, b2], s, axis=-1, epsilon=1e-12)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/output"))
    graph = helper.make_graph(
        b.nodes,
        "bert_base",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(
                "attention_mask", TensorProto.INT64, ["batch", "sequence"]
            ),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
            )
        ],
        initializer=b.inits,
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR, producer_name="bench"
    )


# -- synthetic graphs of N nodes -----------------------------------------------------------


class _Synth:
    """Blocks over ``[batch, seq, HIDDEN]`` activations, each keeping that shape."""

    POOL = 32

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.inits: list[onnx.TensorProto] = []
        self._n = 0
        for i in range(self.POOL):
            w = (self.rng.standard_normal((HIDDEN, HIDDEN)) * 0.05).astype(np.float32)
            self.inits.append(numpy_helper.from_array(w, f"w{i}"))
            self.inits.append(numpy_helper.from_array(np.zeros(HIDDEN, dtype=np.float32), f"b{i}"))
            conv = (self.rng.standard_normal((HIDDEN, HIDDEN, 3)) * 0.05).astype(np.float32)
            self.inits.append(numpy_helper.from_array(conv, f"conv{i}"))
        consts = {
            "ln_g": np.ones(HIDDEN, dtype=np.float32),
            "ln_b": np.zeros(HIDDEN, dtype=np.float32),
            "split_shape": np.array([0, 0, 8, 8], dtype=np.int64),
            "merge_shape": np.array([0, 0, HIDDEN], dtype=np.int64),
            "hidden_tail": np.array([HIDDEN], dtype=np.int64),
            "s0": np.array([0], dtype=np.int64),
            "s2": np.array([2], dtype=np.int64),
            "half": np.array(0.5, dtype=np.float32),
            "trips": np.array(2, dtype=np.int64),
            "true": np.array(True),
        }
        for name, value in consts.items():
            self.inits.append(numpy_helper.from_array(value, name))

    def node(
        self, nodes: list[onnx.NodeProto], op: str, inputs: list[str], scope: str, **attrs: object
    ) -> str:
        self._n += 1
        out = f"{scope}/{op}_{self._n}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def w(self) -> tuple[str, str]:
        i = int(self.rng.integers(self.POOL))
        return f"w{i}", f"b{i}"

    def block(self, nodes: list[onnx.NodeProto], h: str, scope: str, depth: int) -> str:
        """One block from the op mix; control flow only where ``depth`` allows."""
        kinds = ["linear", "linear", "linear", "norm", "heads", "shape", "gate", "cast"]
        kind = kinds[int(self.rng.integers(len(kinds)))]
        if float(self.rng.random()) < CONV_SHARE:
            kind = "conv"
        # control flow is rare in exported graphs: about one top-level block in CONTROL_EVERY,
        # and one block in four of a body nests an If (two levels at most)
        roll = float(self.rng.random())
        if depth == 0 and roll < 1 / CONTROL_EVERY:
            kind = "if" if roll < 0.5 / CONTROL_EVERY else "loop"
        elif depth == 1 and roll < 0.25:
            kind = "if"
        n = self.node
        if kind == "linear":
            w, b = self.w()
            y = n(nodes, "Add", [n(nodes, "MatMul", [h, w], scope), b], scope)
            act = ("Relu", "Gelu-erf", "Silu")[int(self.rng.integers(3))]
            if act == "Relu":
                y = n(nodes, "Relu", [y], scope)
            elif act == "Silu":
                y = n(nodes, "Mul", [y, n(nodes, "Sigmoid", [y], scope)], scope)
            else:
                y = n(
                    nodes,
                    "Mul",
                    [n(nodes, "Mul", [y, n(nodes, "Erf", [y], scope)], scope), "half"],
                    scope,
                )
            return n(nodes, "Add", [y, h], scope)
        if kind == "norm":
            return n(nodes, "LayerNormalization", [h, "ln_g", "ln_b"], scope, axis=-1)
        if kind == "heads":
            t = n(nodes, "Reshape", [h, "split_shape"], scope)
            t = n(nodes, "Transpose", [t], scope, perm=[0, 2, 1, 3])
            t = n(nodes, "Softmax", [t], scope, axis=-1)
            t = n(nodes, "Transpose", [t], scope, perm=[0, 2, 1, 3])
            return n(nodes, "Reshape", [t, "merge_shape"], scope)
        if kind == "shape":
            # the exporter's dynamic reshape: Shape -> Slice -> Concat -> Reshape
            sh = n(nodes, "Shape", [h], scope)
            lead = n(nodes, "Slice", [sh, "s0", "s2"], scope)
            target = n(nodes, "Concat", [lead, "hidden_tail"], scope, axis=0)
            return n(nodes, "Reshape", [h, target], scope)
        if kind == "conv":
            i = int(self.rng.integers(self.POOL))
            t = n(nodes, "Transpose", [h], scope, perm=[0, 2, 1])
            t = n(nodes, "Conv", [t, f"conv{i}"], scope, pads=[1, 1])
            return n(nodes, "Transpose", [t], scope, perm=[0, 2, 1])
        if kind == "gate":
            w, _ = self.w()
            g = n(nodes, "Sigmoid", [n(nodes, "MatMul", [h, w], scope)], scope)
            return n(nodes, "Mul", [h, g], scope)
        if kind == "cast":
            t = n(nodes, "Cast", [h], scope, to=TensorProto.FLOAT16)
            return n(nodes, "Cast", [n(nodes, "Relu", [t], scope)], scope, to=TensorProto.FLOAT)
        if kind == "if":
            return self.if_block(nodes, h, scope, depth)
        return self.loop_block(nodes, h, scope, depth)

    def _branch(self, h: str, scope: str, depth: int, blocks: int, name: str) -> onnx.GraphProto:
        body: list[onnx.NodeProto] = []
        y = h
        for _ in range(blocks):
            y = self.block(body, y, scope, depth + 1)
        out = self.node(body, "Identity", [y], scope)
        vi = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
        return helper.make_graph(body, name, [], [vi])

    def if_block(self, nodes: list[onnx.NodeProto], h: str, scope: str, depth: int) -> str:
        k = self._n
        then_g = self._branch(h, f"{scope}/If_{k}/then", depth, 2, f"then_{k}")
        else_g = self._branch(h, f"{scope}/If_{k}/else", depth, 1, f"else_{k}")
        return self.node(nodes, "If", ["flag"], scope, then_branch=then_g, else_branch=else_g)

    def loop_block(self, nodes: list[onnx.NodeProto], h: str, scope: str, depth: int) -> str:
        k = self._n
        bscope = f"{scope}/Loop_{k}/body"
        body: list[onnx.NodeProto] = []
        x = f"{bscope}/x_in"
        y = x
        for _ in range(3):
            y = self.block(body, y, bscope, depth + 1)
        cond = self.node(body, "Identity", [f"{bscope}/cond_in"], bscope)
        y = self.node(body, "Identity", [y], bscope)
        g = helper.make_graph(
            body,
            f"loop_body_{k}",
            [
                helper.make_tensor_value_info(f"{bscope}/i", TensorProto.INT64, []),
                helper.make_tensor_value_info(f"{bscope}/cond_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info(x, TensorProto.FLOAT, None),
            ],
            [
                helper.make_tensor_value_info(cond, TensorProto.BOOL, []),
                helper.make_tensor_value_info(y, TensorProto.FLOAT, None),
            ],
        )
        return self.node(nodes, "Loop", ["trips", "true", h], scope, body=g)


def synthetic(target_nodes: int, seed: int = 0) -> onnx.ModelProto:
    """About ``target_nodes`` nodes (subgraphs included) in layers of mixed blocks."""
    s = _Synth(seed)
    nodes: list[onnx.NodeProto] = []
    h = "x"
    layer = 0
    # every node made (bodies included) goes through _Synth.node, so its counter is the size
    while s._n < target_nodes:
        h = s.block(nodes, h, f"/layers.{layer}", depth=0)
        layer += 1
    nodes.append(helper.make_node("Identity", [h], ["y"], name="/output"))
    graph = helper.make_graph(
        nodes,
        f"synth_{target_nodes}",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
            helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        initializer=s.inits,
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR, producer_name="bench"
    )


# -- 4 GiB of external weights, sparse ------------------------------------------------------

EXTERNAL_LAYERS = 16
EXTERNAL_DIM = 8192  # 8192 x 8192 float32 = 256 MiB per layer, 4 GiB in all


def external_weights(folder: Path, data_name: str = "weights.bin") -> tuple[onnx.ModelProto, int]:
    """A MatMul chain whose weights live in ``folder/data_name``, a sparse file of 4 GiB."""
    per = EXTERNAL_DIM * EXTERNAL_DIM * 4
    inits = []
    nodes = []
    h = "x"
    for i in range(EXTERNAL_LAYERS):
        t = onnx.TensorProto()
        t.name = f"layers.{i}.weight"
        t.data_type = TensorProto.FLOAT
        t.dims.extend([EXTERNAL_DIM, EXTERNAL_DIM])
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", data_name), ("offset", str(i * per)), ("length", str(per))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        inits.append(t)
        out = f"/layers.{i}/Relu_output_0"
        mm = f"/layers.{i}/MatMul_output_0"
        nodes.append(helper.make_node("MatMul", [h, t.name], [mm], name=f"/layers.{i}/MatMul"))
        nodes.append(helper.make_node("Relu", [mm], [out], name=f"/layers.{i}/Relu"))
        h = out
    nodes.append(helper.make_node("Identity", [h], ["y"], name="/output"))
    graph = helper.make_graph(
        nodes,
        "external_4gb",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", EXTERNAL_DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", EXTERNAL_DIM])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR, producer_name="bench"
    )
    return model, per * EXTERNAL_LAYERS


# -- a folder of small models ----------------------------------------------------------------

#: one-node models in the manner of onnx's backend node tests (which the onnx wheel does
#: not ship): (name, op, input shapes, attributes); every input and output is float32
NODE_TESTS: tuple[tuple[str, str, tuple[tuple[int | str, ...], ...], dict[str, Any]], ...] = (
    ("abs", "Abs", ((3, 4, 5),), {}),
    ("add", "Add", ((3, 4, 5), (3, 4, 5)), {}),
    ("add_bcast", "Add", ((3, 4, 5), (5,)), {}),
    ("averagepool_2d", "AveragePool", ((1, 3, 32, 32),), {"kernel_shape": [2, 2]}),
    ("ceil", "Ceil", ((3, 4, 5),), {}),
    ("clip_default", "Clip", ((3, 4, 5),), {}),
    ("concat_2d", "Concat", ((2, 2), (2, 2)), {"axis": 1}),
    ("conv_3x3", "Conv", ((1, 1, 5, 5), (1, 1, 3, 3)), {"pads": [1, 1, 1, 1]}),
    ("cos", "Cos", ((3, 4, 5),), {}),
    ("div", "Div", ((3, 4, 5), (3, 4, 5)), {}),
    ("elu", "Elu", ((3, 4, 5),), {"alpha": 2.0}),
    ("erf", "Erf", ((1, 3, 32, 32),), {}),
    ("exp", "Exp", ((3, 4, 5),), {}),
    ("flatten_axis1", "Flatten", ((2, 3, 4, 5),), {"axis": 1}),
    ("floor", "Floor", ((3, 4, 5),), {}),
    ("gelu_tanh", "Gelu", ((3, 4, 5),), {"approximate": "tanh"}),
    ("gemm_default", "Gemm", ((3, 5), (5, 4)), {}),
    ("globalaveragepool", "GlobalAveragePool", ((1, 3, 5, 5),), {}),
    ("hardsigmoid", "HardSigmoid", ((3, 4, 5),), {"alpha": 0.5, "beta": 0.6}),
    ("layer_normalization", "LayerNormalization", (("N", 4, 5), (5,), (5,)), {}),
    ("leakyrelu", "LeakyRelu", ((3, 4, 5),), {"alpha": 0.1}),
    ("log", "Log", ((3, 4, 5),), {}),
    ("matmul_3d", "MatMul", (("N", 3, 4), (4, 3)), {}),
    ("maxpool_2d", "MaxPool", ((1, 3, 32, 32),), {"kernel_shape": [2, 2]}),
    ("mul", "Mul", ((3, 4, 5), (3, 4, 5)), {}),
    ("neg", "Neg", ((3, 4, 5),), {}),
    ("reciprocal", "Reciprocal", ((3, 4, 5),), {}),
    ("relu", "Relu", (("N", 4, 5),), {}),
    ("sigmoid", "Sigmoid", ((3, 4, 5),), {}),
    ("softmax_axis1", "Softmax", ((3, 4, 5),), {"axis": 1}),
    ("sqrt", "Sqrt", ((3, 4, 5),), {}),
    ("tanh", "Tanh", (("N", 4, 5),), {}),
)


def node_test(
    op: str, shapes: Sequence[Sequence[int | str]], attrs: dict[str, Any]
) -> onnx.ModelProto:
    """One node of ``op`` on float32 inputs of ``shapes`` (opset 17; Gelu needs 20)."""
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node(op, names, ["y"], **attrs)
    inputs = [
        helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(s))
        for n, s in zip(names, shapes, strict=True)
    ]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([node], f"test_{op.lower()}", inputs, [out])
    opset = 20 if op == "Gelu" else 17
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    # the output's shape as ONNX infers it (the checker wants one declared)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


def folder_corpus(cache: Path | None = None) -> Path:
    """A folder of the onnx wheel's light models and the one-node models above (41 files)."""
    folder = (cache or default_cache()) / f"v{CORPUS_VERSION}" / "folder"
    folder.mkdir(parents=True, exist_ok=True)
    for p in sorted(light_dir().glob("light_*.onnx")):
        target = folder / p.name
        if not target.is_file():
            shutil.copyfile(p, target)
    for name, op, shapes, attrs in NODE_TESTS:
        _write(
            folder / f"test_{name}.onnx",
            lambda op=op, shapes=shapes, attrs=attrs: node_test(op, shapes, attrs),  # type: ignore[misc]
        )
    return folder


# -- the cache -----------------------------------------------------------------------------

SYNTH_SIZES = {"synth_1k": 1_000, "synth_10k": 10_000, "synth_100k": 100_000}


def _stamp(folder: Path) -> Path:
    return folder / f".corpus-v{CORPUS_VERSION}"


def _write(path: Path, build: Callable[[], onnx.ModelProto]) -> None:
    if path.is_file():
        return
    atomic_write_bytes(path, build().SerializeToString())


def light_models() -> list[CorpusModel]:
    """The onnx wheel's light models."""
    out = []
    for p in sorted(light_dir().glob("light_*.onnx")):
        m = onnx.load(str(p), load_external_data=False)
        out.append(CorpusModel(p.stem, p, count_nodes(m.graph), "onnx wheel light model"))
    return out


def bert(cache: Path | None = None, log: Callable[[str], None] = print) -> CorpusModel:
    """The generated BERT-base (written on first use)."""
    folder = (cache or default_cache()) / f"v{CORPUS_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bert_base.onnx"
    if not path.is_file():
        log("corpus: generating bert_base (about 440 MB of random weights)")
    _write(path, bert_base)
    m = onnx.load(str(path), load_external_data=False)
    return CorpusModel(
        "bert_base", path, count_nodes(m.graph), "generated 12-layer BERT-base encoder"
    )


def build(
    cache: Path | None = None, quick: bool = False, log: Callable[[str], None] = print
) -> list[CorpusModel]:
    """Generate what is missing and return the corpus (``quick``: no BERT, no 100k)."""
    folder = (cache or default_cache()) / f"v{CORPUS_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    out = light_models()
    for name, size in SYNTH_SIZES.items():
        if quick and size > 10_000:
            continue
        path = folder / f"{name}.onnx"
        if not path.is_file():
            log(f"corpus: generating {name}")
        _write(path, lambda size=size: synthetic(size))
        m = onnx.load(str(path), load_external_data=False)
        out.append(CorpusModel(name, path, count_nodes(m.graph), f"generated, target {size} nodes"))
    if not quick:
        out.append(bert(cache, log))
    ext = folder / "external_4gb"
    ext.mkdir(exist_ok=True)
    model, size = external_weights(ext)
    path = ext / "model.onnx"
    data = ext / "weights.bin"
    if not data.is_file() or data.stat().st_size != size:
        # truncate makes a sparse file: the size is real, no block is written
        with open(data, "wb") as fh:
            os.truncate(fh.fileno(), size)
    _write(path, lambda: model)
    out.append(
        CorpusModel(
            "external_4gb", path, count_nodes(model.graph), "generated, sparse external data", size
        )
    )
    _stamp(folder).touch()
    return out

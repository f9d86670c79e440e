"""ORT's contrib operators get the types and shapes ORT's own schemas give them
(``analyses.contrib_types``): each case's outputs compared with what a CPU session of
ORT reports for them, and what follows downstream."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from onnxlint.analyses.contrib_types import RULES, infer_shapes, used_rules
from onnxlint.analyses.session_types import infer_session_types
from onnxlint.analyses.shapes import Shapes, collect_value_types

MS = "com.microsoft"


def _init(name: str, shape: list[int], dtype: type = np.float32) -> onnx.TensorProto:
    rng = np.random.default_rng(0)
    if np.issubdtype(dtype, np.integer):
        data = rng.integers(0, 4, size=shape).astype(dtype)
    else:
        data = rng.standard_normal(shape).astype(dtype)
    return numpy_helper.from_array(data, name)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto],
    opset: int = 17,
    ms: bool = True,
) -> onnx.ModelProto:
    """The nodes, each of their outputs a graph output of no declared type (ORT reports
    the type it infers for those)."""
    outs = [h.make_value_info(o, onnx.TypeProto()) for n in nodes for o in n.output if o]
    graph = h.make_graph(nodes, "g", inputs, outs, initializer=inits)
    imports = [h.make_opsetid("", opset)] + ([h.make_opsetid(MS, 1)] if ms else [])
    return h.make_model(graph, opset_imports=imports, ir_version=8)


def _x(
    name: str = "x", shape: list[int | str] | None = None, elem: int = T.FLOAT
) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, ["b", "s", 8] if shape is None else shape)


def _qparams(prefix: str, zp_dtype: type = np.uint8) -> list[onnx.TensorProto]:
    return [
        numpy_helper.from_array(np.array(0.05, np.float32), f"{prefix}_s"),
        numpy_helper.from_array(np.array(3, zp_dtype), f"{prefix}_z"),
    ]


def _cases() -> dict[str, onnx.ModelProto]:
    cases: dict[str, onnx.ModelProto] = {}
    for op in ("Gelu", "FastGelu", "QuickGelu"):
        cases[op] = _model([h.make_node(op, ["x"], ["y"], domain=MS)], [_x()], [])
    cases["BiasGelu"] = _model(
        [h.make_node("BiasGelu", ["x", "bias"], ["y"], domain=MS)], [_x()], [_init("bias", [8])]
    )
    ln_inits = [_init("gamma", [8]), _init("beta", [8]), _init("bias", [8])]
    for op in ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization"):
        inputs = ["x", "skip", "gamma"] + (["beta", "bias"] if "Simplified" not in op else [])
        cases[op] = _model(
            [h.make_node(op, inputs, ["y", "mean", "inv", "sum"], domain=MS, epsilon=1e-5)],
            [_x(), _x("skip")],
            ln_inits,
        )
    cases["SkipLayerNormalization-fp16"] = _model(
        [
            h.make_node(
                "SkipLayerNormalization", ["x", "skip", "g16"], ["y", "", "", "sum"], domain=MS
            )
        ],
        [_x(elem=T.FLOAT16), _x("skip", elem=T.FLOAT16)],
        [_init("g16", [8], np.float16)],
    )
    cases["SimplifiedLayerNormalization"] = _model(
        [h.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["y", "inv"], axis=-1)],
        [_x()],
        [_init("gamma", [8])],
        ms=False,
    )
    # ORT's own LayerNormalization in ai.onnx below ONNX's opset 17 (ORT's transformer
    # optimizer writes it so into opset-14 BERTs)
    cases["LayerNormalization-opset14"] = _model(
        [h.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1)],
        [_x()],
        [_init("gamma", [8]), _init("beta", [8])],
        opset=14,
        ms=False,
    )
    cases["SimplifiedLayerNormalization-axis1"] = _model(
        [h.make_node("SimplifiedLayerNormalization", ["x", "g2"], ["y", "inv"], axis=1)],
        [_x(shape=["b", 4, 8])],
        [_init("g2", [4, 8])],
        ms=False,
    )
    ids = h.make_tensor_value_info("ids", T.INT32, ["b", "s"])
    emb = [
        _init("word", [30, 8]),
        _init("pos", [16, 8]),
        _init("seg", [2, 8]),
        _init("gamma", [8]),
        _init("beta", [8]),
    ]
    cases["EmbedLayerNormalization"] = _model(
        [
            h.make_node(
                "EmbedLayerNormalization",
                ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask"],
                ["y", "mask_index", "sum"],
                domain=MS,
                epsilon=1e-5,
            )
        ],
        [
            ids,
            h.make_tensor_value_info("segs", T.INT32, ["b", "s"]),
            h.make_tensor_value_info("mask", T.INT32, ["b", "s"]),
        ],
        emb,
    )
    cases["Attention"] = _model(
        [h.make_node("Attention", ["x", "w", "wb", "mask"], ["y"], domain=MS, num_heads=2)],
        [_x(), h.make_tensor_value_info("mask", T.INT32, ["b"])],
        [_init("w", [8, 24]), _init("wb", [24])],
    )
    cases["Attention-qkv-sizes"] = _model(
        [
            h.make_node(
                "Attention",
                ["x", "w2", "wb2"],
                ["y"],
                domain=MS,
                num_heads=2,
                qkv_hidden_sizes=[8, 8, 4],
            )
        ],
        [_x()],
        [_init("w2", [8, 20]), _init("wb2", [20])],
    )
    cases["MultiHeadAttention"] = _model(
        [h.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS, num_heads=2)],
        [_x("q"), _x("k", ["b", "l", 8]), _x("v", ["b", "l", 6])],
        [],
    )
    cases["MatMulNBits"] = _model(
        [
            h.make_node(
                "MatMulNBits",
                ["x", "qw", "qs"],
                ["y"],
                domain=MS,
                K=8,
                N=12,
                bits=4,
                block_size=16,
            )
        ],
        [_x()],
        [_init("qw", [12, 1, 8], np.uint8), _init("qs", [12])],
    )
    cases["GatherBlockQuantized"] = _model(
        [
            h.make_node(
                "GatherBlockQuantized",
                ["gdata", "gids", "gscale"],
                ["y"],
                domain=MS,
                block_size=16,
                gather_axis=0,
                quantize_axis=1,
            )
        ],
        [h.make_tensor_value_info("gids", T.INT64, ["b", "s"])],
        [_init("gdata", [30, 8], np.uint8), _init("gscale", [30, 1])],
    )
    qa = h.make_tensor_value_info("qa", T.UINT8, ["b", 4, 8])
    for op in ("QLinearAdd", "QLinearMul"):
        cases[op] = _model(
            [
                h.make_node(
                    op, ["qa", "a_s", "a_z", "qb", "b_s", "b_z", "y_s", "y_z"], ["y"], domain=MS
                )
            ],
            [qa],
            [_init("qb", [8], np.uint8), *_qparams("a"), *_qparams("b"), *_qparams("y")],
        )
    cases["QLinearSoftmax"] = _model(
        [
            h.make_node(
                "QLinearSoftmax",
                ["qa", "a_s", "a_z", "y_s", "y_z"],
                ["y"],
                domain=MS,
                axis=-1,
                opset=13,
            )
        ],
        [qa],
        [*_qparams("a"), *_qparams("y")],
    )
    cases["QLinearConcat"] = _model(
        [
            h.make_node(
                "QLinearConcat",
                ["y_s", "y_z", "qa", "a_s", "a_z", "qc", "b_s", "b_z"],
                ["y"],
                domain=MS,
                axis=1,
            )
        ],
        [qa],
        [_init("qc", [1, 3, 8], np.uint8), *_qparams("a"), *_qparams("b"), *_qparams("y")],
    )
    cases["QGemm"] = _model(
        [
            h.make_node(
                "QGemm",
                ["qm", "a_s", "a_z", "qw", "b_s", "b_z", "qbias", "y_s", "y_z"],
                ["y"],
                domain=MS,
                transB=1,
            )
        ],
        [h.make_tensor_value_info("qm", T.UINT8, ["m", 8])],
        [
            _init("qw", [6, 8], np.int8),
            _init("qbias", [6], np.int32),
            *_qparams("a"),
            numpy_helper.from_array(np.array(0.05, np.float32), "b_s"),
            numpy_helper.from_array(np.array(0, np.int8), "b_z"),
            *_qparams("y"),
        ],
    )
    cases["QGemm-float"] = _model(
        [
            h.make_node(
                "QGemm", ["qm", "a_s", "a_z", "qw", "b_s", "b_z"], ["y"], domain=MS, transB=1
            )
        ],
        [h.make_tensor_value_info("qm", T.UINT8, ["m", 8])],
        [
            _init("qw", [6, 8], np.int8),
            *_qparams("a"),
            numpy_helper.from_array(np.array(0.05, np.float32), "b_s"),
            numpy_helper.from_array(np.array(0, np.int8), "b_z"),
        ],
    )
    cases["SimplifiedLayerNormalization-rank4"] = _model(
        [h.make_node("SimplifiedLayerNormalization", ["x", "g3"], ["y", "inv"], axis=1)],
        [_x(shape=["b", 4, 3, 8])],
        [_init("g3", [4, 3, 8])],
        ms=False,
    )
    cases["RotaryEmbedding"] = _model(
        [
            h.make_node(
                "RotaryEmbedding", ["x", "pos_ids", "cos", "sin"], ["y"], domain=MS, num_heads=2
            )
        ],
        [_x(), h.make_tensor_value_info("pos_ids", T.INT64, ["b", "s"])],
        [_init("cos", [16, 2]), _init("sin", [16, 2])],
    )
    for op, extra in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1})):
        cases[op] = _model(
            [h.make_node(op, ["qa", "a_s", "a_z", "y_s", "y_z"], ["y"], domain=MS, **extra)],
            [qa],
            [*_qparams("a"), *_qparams("y")],
        )
    cases["QAttention"] = _model(
        [
            h.make_node(
                "QAttention",
                ["qx", "qaw", "qab", "a_s", "b_s", "", "a_z", "b_z"],
                ["y"],
                domain=MS,
                num_heads=2,
            )
        ],
        [h.make_tensor_value_info("qx", T.UINT8, ["b", "s", 8])],
        [
            _init("qaw", [8, 24], np.uint8),
            _init("qab", [24]),
            *_qparams("a"),
            *_qparams("b"),
        ],
    )
    # onnxruntime-genai's decoders (ninth held-out batch): packed QKV with a key/value cache
    # of symbolic length; a constant total length larger than the cache's; a windowed cache
    gqa_inputs = [
        _x("qkv", ["b", "s", 64]),
        _x("past_k", ["b", 2, "l", 8]),
        _x("past_v", ["b", 2, "l", 8]),
        h.make_tensor_value_info("seqlens_k", T.INT32, ["b"]),
    ]
    total = [h.make_tensor_value_info("total_len", T.INT32, [])]
    gqa_args = ["qkv", "", "", "past_k", "past_v", "seqlens_k", "total_len"]
    heads = {"num_heads": 4, "kv_num_heads": 2}
    cases["GroupQueryAttention"] = _model(
        [h.make_node("GroupQueryAttention", gqa_args, ["y", "pk", "pv"], domain=MS, **heads)],
        gqa_inputs + total,
        [],
    )
    static_past = [
        _x("qkv", [1, 4, 64]),
        _x("past_k", [1, 2, 4, 8]),
        _x("past_v", [1, 2, 4, 8]),
        h.make_tensor_value_info("seqlens_k", T.INT32, [1]),
    ]
    cases["GroupQueryAttention-total"] = _model(
        [h.make_node("GroupQueryAttention", gqa_args, ["y", "pk", "pv"], domain=MS, **heads)],
        static_past,
        [numpy_helper.from_array(np.array(6, np.int32), "total_len")],
    )
    cases["GroupQueryAttention-window"] = _model(
        [
            h.make_node(
                "GroupQueryAttention", gqa_args, ["y", "pk", "pv"], domain=MS,
                sliding_window_cache=1, local_window_size=4, **heads,
            )
        ],
        static_past,
        [numpy_helper.from_array(np.array(6, np.int32), "total_len")],
    )  # fmt: skip
    q_names = ["word", "pos", "seg", "gamma", "beta"]
    q_shapes = [[30, 8], [16, 8], [2, 8], [8], [8]]
    cases["QEmbedLayerNormalization"] = _model(
        [
            h.make_node(
                "QEmbedLayerNormalization",
                ["ids", "segs"]
                + [f"q{n}" for n in q_names]
                + ["mask"]
                + [f"q{n}_s" for n in q_names]
                + [f"q{n}_z" for n in q_names],
                ["y", "mask_index"],
                domain=MS,
                epsilon=1e-5,
            )
        ],
        [
            ids,
            h.make_tensor_value_info("segs", T.INT32, ["b", "s"]),
            h.make_tensor_value_info("mask", T.INT32, ["b", "s"]),
        ],
        [_init(f"q{n}", shape, np.uint8) for n, shape in zip(q_names, q_shapes, strict=True)]
        + [t for n in q_names for t in _qparams(f"q{n}")],
    )
    return cases


CASES = _cases()


def _dims(shape: list[int | str | None] | None) -> tuple[int | str | None, ...] | None:
    return None if shape is None else tuple(None if d is None else d for d in shape)


def _ort_types(
    model: onnx.ModelProto,
) -> dict[str, tuple[str, tuple[int | str | None, ...] | None]]:
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return {o.name: (o.type, _dims(o.shape)) for o in session.get_outputs()}


def _ours(model: onnx.ModelProto) -> dict[str, tuple[str, tuple[int | str | None, ...] | None]]:
    inferred = infer_shapes(model, strict_mode=True, data_prop=False)
    table = collect_value_types(inferred)
    return {
        o.name: (f"tensor({table[o.name].dtype})", table[o.name].shape)
        for o in model.graph.output
        if o.name in table and table[o.name].dtype
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_ort_s(name: str) -> None:
    """Every output a rule types has ORT's type and shape (ORT names a dim it does not
    know after the node, ``unk__`` style; ours is then unknown: compared as unknown)."""
    model = CASES[name]
    if name.startswith("GroupQueryAttention"):
        # its rule is onnxruntime 1.32's (present length, sliding_window_cache); onnxruntime
        # 1.24 infers the present key/value otherwise and refuses sliding_window_cache
        ort = pytest.importorskip("onnxruntime")
        major_minor = tuple(int(p) for p in ort.__version__.split(".")[:2])
        if major_minor < (1, 32):
            pytest.skip(
                f"GroupQueryAttention's rule is onnxruntime 1.32's, not {ort.__version__}'s"
            )
    real = _ort_types(model)
    ours = _ours(model)
    assert ours, name  # the rule typed something
    for out, got in ours.items():
        want_type, want_shape = real[out]
        if want_shape is not None:
            want_shape = tuple(
                d
                if isinstance(d, int) or (isinstance(d, str) and d in ("b", "s", "l", "m"))
                else None
                for d in want_shape
            )
        assert got == (want_type, want_shape), (name, out)


def test_every_rule_has_a_case() -> None:
    ops = {n.op_type for m in CASES.values() for n in m.graph.node}
    untested = {op for _, op in RULES} - ops
    assert untested == set()


def test_downstream_of_a_contrib_op_is_typed() -> None:
    """A standard op after a contrib op gets a type and shape in the Shapes analysis and
    the session types (without the rules: none)."""
    model = _model(
        [
            h.make_node("FastGelu", ["x"], ["g"], domain=MS),
            h.make_node("MatMul", ["g", "w"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 8])],
        [_init("w", [8, 3])],
    )
    del model.graph.output[0]
    assert Shapes.of_model(model).value_type("y").shape == (1, 4, 3)
    session = collect_value_types(infer_session_types(model))
    assert session["y"].shape == (1, 4, 3) and session["y"].dtype == "float"


def test_contrib_domain_not_imported() -> None:
    """A contrib node whose domain the model does not import (ORT imports it on loading)
    is inferred; the answer does not import it either."""
    model = CASES["FastGelu"]
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.opset_import[1]
    inferred = infer_shapes(bare, strict_mode=False, data_prop=False)
    assert [o.domain for o in inferred.opset_import] == [""]
    assert collect_value_types(inferred)["y"].shape == ("b", "s", 8)


def test_registry_left_as_found() -> None:
    """The schemas are lent for the call only: nothing stays registered."""
    infer_shapes(CASES["SkipLayerNormalization"], strict_mode=False, data_prop=False)
    assert not onnx.defs.has("SkipLayerNormalization", MS)
    assert not onnx.defs.has("SimplifiedLayerNormalization", "")
    infer_shapes(CASES["LayerNormalization-opset14"], strict_mode=False, data_prop=False)
    assert not onnx.defs.has("LayerNormalization", 16, "")
    assert onnx.defs.has("LayerNormalization", 17, "")  # ONNX's own stays


def test_op_types_known_answer_without_a_walk() -> None:
    """A caller that has the op types (the Shapes analysis) is answered from them alone
    when none of them has a rule (the FastGelu model's own nodes are not read)."""
    model = CASES["FastGelu"]
    assert used_rules(model, {"Relu", "MatMul"}) == frozenset()
    assert used_rules(model, {"FastGelu"}) == {(MS, "FastGelu")}


def test_standard_model_uses_no_rule() -> None:
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]> g (float[2] x) => (float[2] y) { y = Relu(x) }'
    )
    assert used_rules(model) == set()


def test_no_other_thread_sees_a_lent_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema lookup whose answer is kept (``index.resolve_schema``) waits while schemas
    are lent to an inference in another thread, and then finds none (the language server
    lints in threads)."""
    import threading

    from onnxlint.analyses import contrib_types
    from onnxlint.index import resolve_schema

    started, release = threading.Event(), threading.Event()

    def slow(ctx: object) -> None:
        started.set()
        release.wait(10)

    monkeypatch.setitem(contrib_types.RULES, (MS, "FastGelu"), slow)
    inference = threading.Thread(
        target=infer_shapes,
        args=(CASES["FastGelu"],),
        kwargs={"strict_mode": False, "data_prop": False},
    )
    inference.start()
    assert started.wait(10)
    found: list[object] = []
    lookup = threading.Thread(
        target=lambda: found.append(resolve_schema.__wrapped__("FastGelu", MS, 1))
    )
    lookup.start()
    lookup.join(0.3)
    assert lookup.is_alive()  # waits for the inference
    release.set()
    inference.join(10)
    lookup.join(10)
    assert found == [None]

"""OpenVINO's EP ships in its own build of ONNX Runtime (onnxruntime-openvino 1.24.1 is ORT
1.24.1), and that ORT checks every ``com.microsoft`` node against its own contrib schemas
when it loads a model: an attribute or an input its schema does not have makes it refuse
the whole model ("This is an invalid model. In Node, (...GroupQueryAttention...)"),
whatever the EP would have taken. The installed ORT (1.32.0) has newer schemas, so a
model that loads on the CPU and QNN fails on OpenVINO (issue #16, ninth held-out batch:
onnxruntime-genai's Gemma 2 decoder writes GroupQueryAttention's ``sliding_window_cache``,
its CUDA Qwen3 decoder the query/key norm inputs 14 and 15 and ``qk_norm_epsilon``).

The OpenVINO profiles name their runtime (``runtime_onnxruntime``), and
``rules/ort_contrib_schemas.json`` holds that release's contrib schemas, read from the
onnxruntime-openvino 1.24.1 wheel (``tools/ort_contrib_schemas.py``); OL209 reports a node
they refuse. Measured with onnxruntime-openvino 1.24.1 (CPU, both levels): the first model
loads (its GroupQueryAttention runs on the CPU EP), the others fail to load; all four load
on the CPU EP of onnxruntime 1.32.0. An operator 1.24.1 does not define at all (ScaledSiLU,
added later; 1.32.0's CPU EP runs it) fails too ("com.microsoft:ScaledSiLU(-1) is not a
registered function/op"), at both levels.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxlint

from .conftest import openvino_runner, real_sessions

OV = "OpenVINOExecutionProvider"


def gqa(extra_attrs: dict[str, object], norms: bool = False) -> onnx.ModelProto:
    """Relu -> GroupQueryAttention (packed QKV, 4 + 2 heads of 16, a key/value cache) ->
    Relu; ``norms`` adds the query and key norm weights (inputs 14, 15) with
    ``qk_norm_epsilon``, as onnxruntime-genai writes them for CUDA."""
    inputs = ["qkv", "", "", "past_k", "past_v", "seqlens_k", "total_len"]
    inits = []
    attrs = dict(extra_attrs)
    if norms:
        inputs += ["", "", "", "", "", "", "", "q_norm", "k_norm"]
        inits = [
            numpy_helper.from_array(np.ones(16, np.float32), "q_norm"),
            numpy_helper.from_array(np.ones(16, np.float32), "k_norm"),
        ]
        attrs["qk_norm_epsilon"] = 1e-6
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["qkv"], "pre"),
            helper.make_node(
                "GroupQueryAttention",
                inputs,
                ["attn", "present_k", "present_v"],
                "gqa",
                domain="com.microsoft",
                num_heads=4,
                kv_num_heads=2,
                **attrs,
            ),
            helper.make_node("Relu", ["attn"], ["y"], "post"),
        ],
        "gqa",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 128]),
            helper.make_tensor_value_info("past_k", TensorProto.FLOAT, [1, 2, 8, 16]),
            helper.make_tensor_value_info("past_v", TensorProto.FLOAT, [1, 2, 8, 16]),
            helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
            helper.make_tensor_value_info("total_len", TensorProto.INT32, []),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 64]),
            helper.make_tensor_value_info("present_k", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("present_v", TensorProto.FLOAT, None),
        ],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model


def matmul_nbits(extra_attrs: dict[str, object]) -> onnx.ModelProto:
    """Relu -> MatMulNBits (4 bits, K 64, N 32) -> Relu."""
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], "pre"),
            helper.make_node(
                "MatMulNBits", ["a", "w", "s"], ["m"], "mnb", domain="com.microsoft",
                K=64, N=32, bits=4, block_size=32, **extra_attrs,
            ),
            helper.make_node("Relu", ["m"], ["y"], "post"),
        ],
        "mnb",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 32])],
        [
            numpy_helper.from_array(rng.integers(0, 255, (32, 2, 16)).astype(np.uint8), "w"),
            numpy_helper.from_array(np.full((64,), 0.01, np.float32), "s"),
        ],
    )  # fmt: skip
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model


def contrib_unary(op: str) -> onnx.ModelProto:
    """Relu -> com.microsoft ``op`` -> Relu, shapes unchanged."""
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], "pre"),
            helper.make_node(op, ["a"], ["b"], "op", domain="com.microsoft"),
            helper.make_node("Relu", ["b"], ["y"], "post"),
        ],
        "unary",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model


#: name -> (model, whether ORT 1.24.1 loads it)
MODELS = {
    "gqa_1_24_schema": (gqa({"local_window_size": -1, "softcap": 0.0}), True),
    "gqa_sliding_window_cache": (gqa({"sliding_window_cache": 1, "local_window_size": 16}), False),
    "gqa_qk_norms": (gqa({}, norms=True), False),
    "matmulnbits_weight_prepacked": (matmul_nbits({"weight_prepacked": 0}), False),
    # an operator added after 1.24 (onnxruntime 1.32's CPU EP runs it)
    "scaled_silu_not_in_1_24": (contrib_unary("ScaledSiLU"), False),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_openvino_runtime_refuses_newer_contrib_schemas(name: str) -> None:
    model, loads = MODELS[name]
    flagged = [d for d in onnxlint.lint(model, eps=["openvino"]).diagnostics if d.code == "OL209"]
    assert bool(flagged) != loads, [d.message for d in flagged]
    assert all(d.ep == "openvino-cpu" for d in flagged)
    # the installed ORT's own CPU EP knows these schemas: nothing to report there
    assert not [d for d in onnxlint.lint(model, eps=["cpu"]).diagnostics if d.code == "OL209"]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_openvino_runtime_schemas_on_real_openvino() -> None:
    runner = openvino_runner()
    real = real_sessions("openvino", str(runner), {n: m for n, (m, _) in MODELS.items()})
    for name, (_, loads) in MODELS.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert bool(r.get("ok")) == loads, (name, level, r.get("error"))
            if not loads:
                error = str(r.get("error"))
                assert "This is an invalid model" in error or "is not a registered" in error, error


def test_an_operator_no_onnxruntime_defines() -> None:
    """An operator no ORT defines: no EP runs it (OL508, for the CPU), and OpenVINO's own
    ORT refuses the model at load (OL209, for OpenVINO): two facts, one per EP."""
    report = onnxlint.lint(contrib_unary("NoSuchOperator"), eps=["openvino"])
    by_code = {d.code: d.ep for d in report.diagnostics}
    assert by_code.get("OL209") == "openvino-cpu" and "OL508" in by_code, by_code

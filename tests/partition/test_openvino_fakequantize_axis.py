"""OpenVINO CPU claims a 16-bit QDQ Mul of a quantized tensor computed from constants by a
constant that varies along axis 2, and then fails to compile it: its CPU plug-in makes a
per-channel FakeQuantize on axis 2 of the pair, and refuses it ('FakeQuantize node with name
.. doesn't support non per-tensor quantization for axis: 2'). The QNN 16-bit per-channel
config's HuBERT has one: the weight norm of its positional convolution,
``v / ReduceL2(v) * g`` with ``g`` of shape [1, 1, K], every step quantized to uint16.

Measured with onnxruntime-openvino 1.24.1 (CPU device) at both levels; the arrangement is the
profile's ``requantized_constant_failures`` entry with ``constant_operand_axis`` 2, and OL506
reports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import context, openvino_runner, real_sessions

_NP = {"uint8": np.uint8, "uint16": np.uint16, "int16": np.int16}


def weight_norm(
    dtype: str = "uint16",
    rank: int = 3,
    g_axis: int | None = 2,
    computed: str = "norm",
    g: str = "dq",
    quantize_computed: bool = True,
    out: str | None = None,
) -> onnx.ModelProto:
    """A grouped Conv on x whose weight is ``Mul(DQ(Q(computed)), g)``, every step Q/DQ'd
    to ``dtype`` (the output to ``out`` when given, "none": not quantized).
    ``computed``: "norm" ``v / ReduceL2(v)`` (a weight norm), "div" ``v / c``, "none" the
    dequantized weight v itself (no QuantizeLinear between it and the Mul), "q_init" a
    QuantizeLinear of a float initializer. ``g``: "dq" a DequantizeLinear of a quantized
    initializer, "float" a float initializer, "uniform" one of equal values. ``g_axis``: the axis g varies on
    (None: a [1, ..., 1] constant); rank 3 is a Conv1d, rank 4 a Conv2d."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    rng = np.random.default_rng(0)

    def init(name: str, value: Any, np_type: Any = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, np_type), name))
        return name

    def node(op: str, ins: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [name], name, **attrs))
        return name

    def qdq(value: str, to: str = dtype) -> str:
        s, z = init(f"{value}_s", 0.01), init(f"{value}_z", 0, _NP[to])
        return node(
            "DequantizeLinear",
            [node("QuantizeLinear", [value, s, z], f"{value}_q"), s, z],
            f"{value}_dq",
        )

    def dequantized(name: str, shape: list[int]) -> str:
        data = init(f"{name}_data", rng.integers(1, 200, shape), _NP[dtype])
        s, z = init(f"{name}_s", 0.01), init(f"{name}_z", 0, _NP[dtype])
        return node("DequantizeLinear", [data, s, z], f"{name}_dq")

    w_shape = [32, 2, 16] if rank == 3 else [32, 2, 4, 4]
    x_shape = [1, 32, 40] if rank == 3 else [1, 32, 10, 10]
    x = qdq("x")
    g_shape = [1] * rank
    if g_axis is not None:
        g_shape[g_axis] = w_shape[g_axis]
    v = qdq(init("v", rng.random(w_shape))) if computed == "q_init" else dequantized("v", w_shape)
    if computed == "norm":
        kept = 2 if g_axis is None else g_axis  # the norm is taken per slice of this axis
        axes = init("axes", [a for a in range(rank) if a != kept], np.int64)
        v = node("Div", [v, qdq(node("ReduceL2", [v, axes], "norm", keepdims=1))], "div")
    elif computed == "div":
        v = node("Div", [v, dequantized("c", g_shape)], "div")
    if computed in ("norm", "div") and quantize_computed:
        v = qdq(v)
    if g == "dq":
        scale = dequantized("g", g_shape)
    else:
        scale = init("g", np.full(g_shape, 0.5) if g == "uniform" else rng.random(g_shape) + 0.5)
    w = node("Mul", [v, scale], "wmul")
    if out != "none":
        w = qdq(w, out or dtype)
    y = qdq(node("Conv", [x, w], "conv", group=16))
    node("Identity", [y], "y")
    out_shape: list[int | str] = [1, 32, *["d"] * (rank - 2)]
    graph = helper.make_graph(
        nodes,
        "fakequantize_axis",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


#: name -> (model, whether the OpenVINO session fails with optimizations disabled, and at
#: the basic level)
CASES: dict[str, tuple[onnx.ModelProto, bool, bool]] = {
    # HuBERT's weight norm: v / ReduceL2(v) * g, g per channel on axis 2
    "norm_u16_rank3": (weight_norm(), True, True),
    "norm_i16_rank3": (weight_norm("int16"), True, True),
    "norm_u16_rank4": (weight_norm(rank=4), True, True),
    "div_u16_rank3": (weight_norm(computed="div"), True, True),
    "norm_float_g": (weight_norm(g="float"), True, True),
    "norm_no_output_qdq": (weight_norm(out="none"), True, True),
    # a QuantizeLinear of a float initializer: ORT's constant folding quantizes it at basic
    "q_init_u16": (weight_norm(computed="q_init"), True, False),
    # what loads: another axis, 8 bits, an 8-bit output, no QuantizeLinear of the computed
    # tensor, a constant of equal values, a plain dequantized weight
    "norm_u16_axis0": (weight_norm(g_axis=0), False, False),
    "norm_u16_axis1": (weight_norm(g_axis=1), False, False),
    "norm_u16_rank4_axis3": (weight_norm(rank=4, g_axis=3), False, False),
    "norm_u16_per_tensor": (weight_norm(g_axis=None), False, False),
    "norm_u8": (weight_norm("uint8"), False, False),
    "norm_u8_output": (weight_norm(out="uint8"), False, False),
    "norm_unquantized": (weight_norm(quantize_computed=False), False, False),
    "norm_uniform_g": (weight_norm(g="uniform"), False, False),
    "plain_weight": (weight_norm(computed="none"), False, False),
}


def _failing(model: onnx.ModelProto, level: str) -> list[str]:
    """The nodes whose OpenVINO verdict at ``level`` fails after the claim."""
    from onnxlint.analyses.assignment import Assignment

    la = context(model, ["openvino"]).analysis(Assignment).level(level)
    assert la is not None
    return sorted(na.node.name for na in la if any(v.fails_after_claim for v in na.verdicts))


@pytest.mark.parametrize("name", list(CASES))
def test_the_axis_2_fakequantize_is_predicted_at_each_level(name: str) -> None:
    model, disabled, basic = CASES[name]
    assert _failing(model, "exported") == (["wmul"] if disabled else [])
    assert _failing(model, "optimized") == (["wmul"] if basic else [])


def test_ol506_names_the_mul_and_the_plugin_check() -> None:
    report = lint(CASES["norm_u16_rank3"][0], eps=["openvino"], what_if=False)
    (d,) = [d for d in report.diagnostics if d.severity.name == "ERROR"]
    assert d.code == "OL506"
    assert d.location.node_name == "wmul"
    assert "non per-tensor quantization for axis: 2" in d.message, d.message
    assert "div_q" in d.message, d.message


def test_other_eps_are_not_affected() -> None:
    report = lint(CASES["norm_u16_rank3"][0], eps=["cpu"], what_if=False)
    assert not [d for d in report.diagnostics if d.code == "OL506"]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_the_axis_2_fakequantize_on_real_openvino() -> None:
    models = {name: model for name, (model, _, _) in CASES.items()}
    real = real_sessions("openvino", str(openvino_runner()), models, timeout_s=600)
    for name, (_, disabled, basic) in CASES.items():
        for level, fails in (("disabled", disabled), ("basic", basic)):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails, (name, level, r)
            if fails:
                assert "openvino" in str(r.get("error")).lower(), (name, level, r)

"""QNN forms its QDQ node units with its own selectors (``qdq_selectors`` of qnn-htp:
per op, how many inputs DequantizeLinears must feed, the Q side, the types), not by
taking whatever DQs a node has. What tells: where a node QNN refuses (here for a dynamic
batch: "Cannot get shape") takes its DQs with it, and where they run on QNN alone.

Each model has a Relu of a second, static input, so QNN's partition has a graph input.
Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def _model(
    nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], shape: list[int | str], name: str
) -> onnx.ModelProto:
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        *inits,
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        *nodes,
        helper.make_node("Relu", ["z"], ["rz"], "relu_z"),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("rz", TensorProto.FLOAT, [1, 4]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _out(src: str) -> list[onnx.NodeProto]:
    return [
        helper.make_node("QuantizeLinear", [src, "s", "zp"], ["oq"], "q_out"),
        helper.make_node("DequantizeLinear", ["oq", "s", "zp"], ["y"], "dq_out"),
    ]


def _add_bias(
    bias: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], inputs: list[str]
) -> None:
    """Append a bias input ``bf`` of 8 values: a DQ of int32 (``"dq"``), a float initializer
    (``"float"``), an Identity of one (``"identity"``); ``"none"``: no bias."""
    if bias == "dq":
        inits += [
            numpy_helper.from_array(np.zeros(8, np.int32), "b"),
            numpy_helper.from_array(np.array(0.0005, np.float32), "bs"),
            numpy_helper.from_array(np.array(0, np.int32), "bzp"),
        ]
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bzp"], ["bf"], "dq_b"))
    elif bias == "float":
        inits.append(numpy_helper.from_array(np.zeros(8, np.float32), "bf"))
    elif bias == "identity":
        inits.append(numpy_helper.from_array(np.zeros(8, np.float32), "b"))
        nodes.append(helper.make_node("Identity", ["b"], ["bf"], "id_b"))
    if bias != "none":
        inputs.append("bf")


def layer_norm(bias: str, batch: int | str) -> onnx.ModelProto:
    """LayerNormalization of ``xd`` with a DQ scale ``dq_w`` and a bias (:func:`_add_bias`)."""
    inits = [
        numpy_helper.from_array(np.full(8, 200, np.uint8), "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
    ]
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "zp"], ["wf"], "dq_w")]
    inputs = ["xd", "wf"]
    _add_bias(bias, nodes, inits, inputs)
    nodes += [helper.make_node("LayerNormalization", inputs, ["n"], "ln"), *_out("n")]
    return _model(nodes, inits, [batch, 8], f"ln_{bias}")


def conv(bias: str, batch: int | str) -> onnx.ModelProto:
    """A QDQ Conv with uint8 weights and a bias (:func:`_add_bias`)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(0, 255, (8, 8, 1, 1)).astype(np.uint8), "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
    ]
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "zp"], ["wf"], "dq_w")]
    inputs = ["xd", "wf"]
    _add_bias(bias, nodes, inits, inputs)
    nodes += [helper.make_node("Conv", inputs, ["c"], "conv"), *_out("c")]
    return _model(nodes, inits, [batch, 8, 4, 4], f"conv_{bias}")


def add_then(after: str, zero_point: int = 128) -> onnx.ModelProto:
    """Add of ``xd`` and a DQ of constants ``dq_k`` (dynamic batch: QNN refuses the Add),
    then ``after``: ``"q"`` (a Q), ``"relu"``, ``"clip6"`` (Clip 0..6) or ``"clip100"``
    (Clip 0..100) before a Q with ``zero_point`` (scale 0.05: uint8 covers 0..12.75 with
    0), ``"two_q"`` (two Qs read the sum), ``"mul"`` (a Mul of ``x`` itself, one DQ)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(0, 255, (8,)).astype(np.uint8), "k"),
        numpy_helper.from_array(np.array(zero_point, np.uint8), "zo"),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi6"),
        numpy_helper.from_array(np.array(100.0, np.float32), "hi100"),
    ]
    op, first = ("Mul", "x") if after == "mul" else ("Add", "xd")
    nodes = [
        helper.make_node("DequantizeLinear", ["k", "s", "zp"], ["kd"], "dq_k"),
        helper.make_node(op, [first, "kd"], ["a"], "target"),
    ]
    last = "a"
    if after == "relu":
        nodes.append(helper.make_node("Relu", ["a"], ["r"], "relu"))
        last = "r"
    elif after in ("clip6", "clip100"):
        nodes.append(helper.make_node("Clip", ["a", "lo", f"hi{after[4:]}"], ["r"], "clip"))
        last = "r"
    if after == "two_q":
        nodes += [
            helper.make_node("QuantizeLinear", ["a", "s", "zp"], ["aq1"], "q_a1"),
            helper.make_node("QuantizeLinear", ["a", "s", "zp"], ["aq2"], "q_a2"),
            helper.make_node("DequantizeLinear", ["aq1", "s", "zp"], ["a1"], "dq_a1"),
            helper.make_node("DequantizeLinear", ["aq2", "s", "zp"], ["a2"], "dq_a2"),
            helper.make_node("Sub", ["a1", "a2"], ["y"], "sub"),
        ]
    else:
        nodes += [
            helper.make_node("QuantizeLinear", [last, "s", "zo"], ["oq"], "q_out"),
            helper.make_node("DequantizeLinear", ["oq", "s", "zo"], ["y"], "dq_out"),
        ]
    return _model(nodes, inits, ["N", 8], f"add_{after}_{zero_point}")


@pytest.mark.parametrize(
    ("after", "zero_point", "unit"),
    [
        ("q", 128, True),
        ("relu", 128, False),  # the Relu narrows the Q's range: not redundant, no unit
        ("relu", 0, True),  # the Q already stops at 0: the Relu joins the Add's unit
        ("clip6", 0, False),
        ("clip100", 0, True),
        ("two_q", 128, False),  # one Q per output slot
        ("mul", 128, False),  # a binary unit needs two DQs
    ],
)
def test_binary_units_and_the_relu_or_clip_after_them(
    after: str, zero_point: int, unit: bool
) -> None:
    plan = partitions(add_then(after, zero_point), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/target"] == CPU_EP
    # in a unit the constant's DQ goes to the CPU with the Add; alone QNN takes it
    assert plan.node_ep["main/dq_k"] == (CPU_EP if unit else QNN)


def test_a_layer_norm_with_a_float_bias_forms_no_unit() -> None:
    plan = partitions(layer_norm("identity", "N"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/ln"] == CPU_EP
    # no unit: every input of a LayerNormalization must come from a DQ; QNN takes the
    # scale's DQ on its own
    assert plan.node_ep["main/dq_w"] == QNN


def test_a_layer_norm_with_dq_inputs_only_forms_a_unit() -> None:
    plan = partitions(layer_norm("dq", "N"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dq_w"] == plan.node_ep["main/ln"] == CPU_EP


def test_a_conv_with_a_float_bias_still_forms_a_unit() -> None:
    for bias in ("float", "identity"):
        plan = partitions(conv(bias, "N"), ["qnn"]).plan("exported")
        assert plan is not None
        assert plan.node_ep["main/dq_w"] == plan.node_ep["main/conv"] == CPU_EP, bias


CASES = {
    f"{build.__name__}_{arg}_{batch}": build(arg, batch)
    for build, args in (
        (layer_norm, ("dq", "identity", "none")),
        (conv, ("float", "identity", "none")),
    )
    for arg in args
    for batch in ("N", 1)
    # a static Conv with an Identity bias fails ORT's layout pass (layout_pass_failures)
    if (build, arg, batch) != (conv, "identity", 1)
}
CASES.update(
    {
        f"add_{after}_{zp}": add_then(after, zp)
        for after, zp in (
            ("q", 128),
            ("relu", 128),
            ("relu", 0),
            ("clip6", 0),
            ("clip100", 0),
            ("two_q", 128),
            ("mul", 128),
        )
    }
)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qnn_selectors_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, CASES)

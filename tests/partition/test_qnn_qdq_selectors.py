"""ORT's QDQ node-unit selectors decide which DequantizeLinear nodes travel with their
target (issue #16, QNN with optimizations disabled on QDQ models with 16-bit
activations): a Conv, Gemm or Layer/InstanceNormalization whose bias DQ is not int32,
or whose activation DQ type differs from its output Q type, forms no unit. Its weight
and bias DQs are then standalone units that QNN claims on their own even when it refuses
the target (about 250 DQ nodes of the real-world corpus's QNN-config QDQ exports).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.partition_units import qdq_units

from .conftest import check_real, context, qnn_cpu_nodes

QNN = "QNNExecutionProvider"


def qdq_conv(bias: str, batch: int | str = "N") -> onnx.ModelProto:
    """x -> Q/DQ (uint16) -> Conv(DQ uint8 weight, DQ ``bias`` bias) -> Q/DQ -> y, plus an
    independent Relu on a static second input (so a QNN partition always has a real input).
    With a symbolic ``batch`` QNN refuses the activation path ("Cannot get shape")."""
    a16, w8 = TensorProto.UINT16, TensorProto.UINT8
    bias_type = {"int32": TensorProto.INT32, "uint16": TensorProto.UINT16}[bias]
    inits = [
        numpy_helper.from_array(np.array(0.01, np.float32), "s"),
        helper.make_tensor("zp16", a16, [], [0]),
        helper.make_tensor("zp8", w8, [], [128]),
        helper.make_tensor("zpb", bias_type, [], [0]),
        helper.make_tensor("w", w8, [4, 3, 3, 3], [128 + (i % 7) for i in range(108)]),
        helper.make_tensor("b", bias_type, [4], [1, 2, 3, 4]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp16"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp16"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["w", "s", "zp8"], ["wd"], "dq_w"),
        helper.make_node("DequantizeLinear", ["b", "s", "zpb"], ["bd"], "dq_b"),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "s", "zp16"], ["cq"], "q_c"),
        helper.make_node("DequantizeLinear", ["cq", "s", "zp16"], ["y"], "dq_c"),
        helper.make_node("Relu", ["x2"], ["y2"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_conv_bias",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 8]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 8]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(("bias", "unit"), [("int32", True), ("uint16", False)])
def test_conv_unit_needs_an_int32_bias(bias: str, unit: bool) -> None:
    ctx = context(qdq_conv(bias, 1), ["qnn"])
    g = ctx.index.main
    dtypes = {"xq": "uint16", "w": "uint8", "b": bias, "cq": "uint16"}
    units = qdq_units(g, g.nodes, dtypes)
    expected = ["main/dq_x", "main/dq_w", "main/dq_b", "main/conv", "main/q_c"]
    assert (units.get("main/conv") == expected) is unit
    # without the element types the selectors' type checks are not applied
    assert qdq_units(g, g.nodes)["main/conv"] == expected


def test_conv_unit_needs_matching_activation_and_output_types() -> None:
    ctx = context(qdq_conv("int32", 1), ["qnn"])
    g = ctx.index.main
    dtypes = {"xq": "uint16", "w": "uint8", "b": "int32", "cq": "uint8"}
    assert "main/conv" not in qdq_units(g, g.nodes, dtypes)


#: nodes on CPU when QNN refuses the dynamic activation path
REFUSED_PATH = {"main/q_x", "main/dq_x", "main/conv", "main/q_c", "main/dq_c"}
DYNAMIC_CASES = {
    # the unit forms: its weight and bias DQs stay with the refused Conv
    "int32": REFUSED_PATH | {"main/dq_w", "main/dq_b"},
    # no unit: QNN takes the weight and bias DQs on their own
    "uint16": REFUSED_PATH,
}


@pytest.mark.parametrize("bias", sorted(DYNAMIC_CASES))
def test_standalone_weight_dqs_stay_on_qnn(bias: str) -> None:
    assert qnn_cpu_nodes(qdq_conv(bias)) == DYNAMIC_CASES[bias]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qdq_conv_bias_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {f"bias_{b}": qdq_conv(b) for b in DYNAMIC_CASES})


# ---------------------------------------------------------------------------
# QNN HTP refuses a whole QDQ LayerNormalization unit with uint8 or uint16 activations and
# an int8 scale ("Failed to add node"; the 8-bit QDQ transformer/ConvNeXt exports at the
# default level, and the QNN 16-bit per-channel config's HuBERT, whose feature-projection
# LayerNorm gets an int8 scale, at both levels); with a uint8 scale it takes it. The
# profile says so in partitioning.refused_qdq_units.


def qdq_layernorm(scale: str, bias: bool, act: str = "uint8") -> onnx.ModelProto:
    """x -> Q/DQ (``act``) -> LayerNormalization(DQ ``scale`` scale[, DQ int32 bias]) ->
    Q/DQ -> Relu."""
    elem = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}[scale]
    act_elem, zero = {"uint8": (TensorProto.UINT8, 128), "uint16": (TensorProto.UINT16, 32768)}[act]
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        helper.make_tensor("zp", act_elem, [], [zero]),
        helper.make_tensor("zw", elem, [], [0]),
        helper.make_tensor("w", elem, [8], [10] * 8),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["w", "s", "zw"], ["wd"], "dq_w"),
    ]
    ln_in = ["xd", "wd"]
    if bias:
        inits += [
            helper.make_tensor("zb", TensorProto.INT32, [], [0]),
            helper.make_tensor("b", TensorProto.INT32, [8], [1] * 8),
        ]
        nodes.append(helper.make_node("DequantizeLinear", ["b", "s", "zb"], ["bd"], "dq_b"))
        ln_in.append("bd")
    nodes += [
        helper.make_node("LayerNormalization", ln_in, ["ln"], "ln", axis=-1),
        helper.make_node("QuantizeLinear", ["ln", "s", "zp"], ["lq"], "q_ln"),
        helper.make_node("DequantizeLinear", ["lq", "s", "zp"], ["ld"], "dq_ln"),
        helper.make_node("Relu", ["ld"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_layernorm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


#: the graph-input Q stays on CPU anyway
_UNIT = {"main/dq_x", "main/dq_w", "main/ln", "main/q_ln"}
LN_CASES = {
    ("int8", True, "uint8"): {"main/q_x", "main/dq_b"} | _UNIT,
    ("int8", False, "uint8"): {"main/q_x"} | _UNIT,
    ("uint8", True, "uint8"): {"main/q_x"},
    ("int8", True, "uint16"): {"main/q_x", "main/dq_b"} | _UNIT,
    ("int8", False, "uint16"): {"main/q_x"} | _UNIT,
    ("uint8", True, "uint16"): {"main/q_x"},
}


@pytest.mark.parametrize("case", sorted(LN_CASES))
def test_qdq_layernorm_with_a_signed_scale_stays_on_cpu(case: tuple[str, bool, str]) -> None:
    assert qnn_cpu_nodes(qdq_layernorm(*case)) == LN_CASES[case]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qdq_layernorm_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"ln_{a}_{s}_{int(b)}": qdq_layernorm(s, b, a) for s, b, a in LN_CASES}
    check_real("qnn", sys.executable, models)

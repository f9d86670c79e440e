"""QNN HTP takes a quantized BatchNormalization only for a fixed table of (input, scale,
bias) types (``batchnormalization_op_builder.cc``, CheckHtpDataTypes, after the builder's
own rewrites of the parameter types it requantizes): 16-bit activations need an 8-bit or
int32 bias, so the LeViT exports quantized with 16-bit activations and 16-bit parameters
(``qdq-levit-qnn-a16-*``, 91 nodes each at the default level) run every BatchNormalization
unit on CPU ("QNN Batchnorm unsupported datatype on HTP."). The profile says so in
``partitioning.refused_qdq_units`` with ``accepted_types``.

The QNN EP's selector forms a BatchNormalization unit only from 3 to 5 DequantizeLinear
inputs (``qnn_ep_utils.cc``); with fewer there is no unit.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) on the LeViT exports of the real-world corpus.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.partition_units import qdq_units

from .conftest import check_real, context, partitions, qnn_cpu_nodes

_ELEM = {
    "uint8": TensorProto.UINT8,
    "int8": TensorProto.INT8,
    "uint16": TensorProto.UINT16,
    "int16": TensorProto.INT16,
    "int32": TensorProto.INT32,
}
_ZP = {"uint8": 128, "int8": 0, "uint16": 32768, "int16": 0, "int32": 0}


def qdq_batchnorm(x: str, scale: str, bias: str | None, stats_dq: bool = True) -> onnx.ModelProto:
    """x -> Q/DQ (``x``) -> BatchNormalization(DQ ``scale`` scale, DQ ``bias`` bias or a
    float bias when None, mean and variance through DQs when ``stats_dq``, float
    initializers otherwise) -> Q/DQ (``x``) -> Relu."""
    c = 4
    inits = [numpy_helper.from_array(np.array(0.01, np.float32), "s")]

    def dq_param(name: str, elem: str, values: list[int]) -> str:
        inits.append(helper.make_tensor(f"{name}_zp", _ELEM[elem], [], [_ZP[elem]]))
        inits.append(helper.make_tensor(f"{name}_q", _ELEM[elem], [c], values))
        nodes.append(
            helper.make_node(
                "DequantizeLinear", [f"{name}_q", "s", f"{name}_zp"], [name], f"dq_{name}"
            )
        )
        return name

    def float_param(name: str, value: float) -> str:
        inits.append(numpy_helper.from_array(np.full(c, value, np.float32), name))
        return name

    inits.append(helper.make_tensor("zx", _ELEM[x], [], [_ZP[x]]))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zx"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zx"], ["xd"], "dq_x"),
    ]
    bn_in = ["xd", dq_param("scale", scale, [_ZP[scale] + 3] * c)]
    bn_in.append(dq_param("bias", bias, [_ZP[bias] + 1] * c) if bias else float_param("bias", 0.1))
    if stats_dq:
        bn_in.append(dq_param("mean", x, [_ZP[x]] * c))
        bn_in.append(dq_param("var", x, [_ZP[x] + 50] * c))
    else:
        bn_in += [float_param("mean", 0.0), float_param("var", 1.0)]
    nodes += [
        helper.make_node("BatchNormalization", bn_in, ["bn"], "bn"),
        helper.make_node("QuantizeLinear", ["bn", "s", "zx"], ["bq"], "q_bn"),
        helper.make_node("DequantizeLinear", ["bq", "s", "zx"], ["bd"], "dq_bn"),
        helper.make_node("Relu", ["bd"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_batchnorm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


#: the graph-input Q stays on CPU anyway
_INPUT_Q = {"main/q_x"}
_UNIT = {"main/dq_x", "main/dq_scale", "main/bn", "main/q_bn", "main/dq_mean", "main/dq_var"}
BN_CASES: dict[tuple[str, str, str | None], set[str]] = {
    # LeViT a16: 16-bit activations with a 16-bit bias are not in HTP's table
    ("uint16", "uint16", "uint16"): _INPUT_Q | _UNIT | {"main/dq_bias"},
    ("uint16", "uint8", "int32"): _INPUT_Q,
    ("uint16", "int16", "uint8"): _INPUT_Q,
    # an int8 scale is requantized to int16 with 16-bit activations
    ("uint16", "int8", "int32"): _INPUT_Q,
    # a float bias is requantized to int32
    ("uint16", "uint16", None): _INPUT_Q,
    # an int8 scale is requantized to uint8 with uint8 activations (LeViT qdq8 units run
    # on HTP)
    ("uint8", "int8", "int32"): _INPUT_Q,
    ("uint8", "uint8", "uint16"): _INPUT_Q | _UNIT | {"main/dq_bias"},
    # signed 8-bit activations only with 8-bit signed parameters throughout
    ("int8", "int8", "int8"): _INPUT_Q,
    ("int8", "int8", "int32"): _INPUT_Q | _UNIT | {"main/dq_bias"},
    # 16-bit signed activations are in no row
    ("int16", "int16", "int32"): _INPUT_Q | _UNIT | {"main/dq_bias"},
}


@pytest.mark.parametrize("case", sorted(BN_CASES, key=str))
def test_qdq_batchnorm_units_outside_htps_type_table_stay_on_cpu(
    case: tuple[str, str, str | None],
) -> None:
    assert qnn_cpu_nodes(qdq_batchnorm(*case)) == BN_CASES[case]


def test_the_refusal_names_the_types_and_the_source() -> None:
    plan = partitions(qdq_batchnorm("uint16", "uint16", "uint16"), ["qnn"]).plan("exported")
    assert plan is not None
    why = plan.released["main/bn"]
    assert "input 0: uint16, input 1: uint16, input 2: uint16" in why
    assert "QNN Batchnorm unsupported datatype on HTP." in why


def test_a_batchnorm_unit_needs_three_dequantized_inputs() -> None:
    """DQs on the input and the scale only (float bias, mean, variance): no unit, so the
    type table does not apply to it."""
    model = qdq_batchnorm("uint16", "uint16", None, stats_dq=False)
    g = context(model, ["qnn"]).index.main
    assert "main/bn" not in qdq_units(g, g.nodes)
    three = qdq_batchnorm("uint16", "uint16", "uint16", stats_dq=False)
    g3 = context(three, ["qnn"]).index.main
    assert qdq_units(g3, g3.nodes)["main/bn"] == [
        "main/dq_x",
        "main/dq_scale",
        "main/dq_bias",
        "main/bn",
        "main/q_bn",
    ]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qdq_batchnorm_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {
        f"bn_{x}_{s}_{b}": qdq_batchnorm(x, s, b)
        for x, s, b in BN_CASES
        if x != "int16"  # ORT's QuantizeLinear of int16 needs the com.microsoft domain
    }
    check_real("qnn", sys.executable, models)

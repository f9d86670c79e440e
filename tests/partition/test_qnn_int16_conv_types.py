"""QNN HTP takes a quantized Conv (DequantizeLinear -> Conv -> QuantizeLinear) of some
activation and weight types in its first capability pass and refuses it once ORT has
rewritten it to NHWC: session creation fails ("Node ... OpType:Conv with
domain:com.ms.internal.nhwc was inserted using the NHWC format as requested by
QNNExecutionProvider, but was not selected by that EP"). It does so for int16 activations
with a uint8 or int16 weight and for uint8 activations with an int16 weight, with or
without an int32 bias; int16 with int8, uint16 with any of them and the 8-bit pairs load.
``onnxruntime.quantization`` writes int16 activations with uint8 weights for
``activation_type=QInt16, weight_type=QUInt8`` (the eighteenth held-out batch's Conv net).
OL512 reports it (``partitioning.layout_pass_failures``, ``qdq_unit_types``). Where the
session loads, HTP runs the int16 QuantizeLinears too, as it does uint16 ones.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxlint import lint

from .conftest import assert_real_failures, check_real, qnn_cpu_nodes, relu_to_relu

C = 8
NP = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16}


def model(act: str, weight: str, bias: bool = True) -> onnx.ModelProto:
    """Relu -> Q -> DQ (``act``) and DQ (a per-tensor ``weight`` [C, C, 3, 3]) and DQ
    (int32 bias, with ``bias``) -> Conv -> Q -> DQ (``act``) -> Relu, opset 21."""
    rng = np.random.default_rng(0)
    a, w_t = NP[act], NP[weight]
    az = 0 if act.startswith("int") else int(np.iinfo(a).max // 2 + 1)
    wz = 0 if weight.startswith("int") else 128
    info = np.iinfo(w_t)
    w = rng.integers(max(info.min, wz - 50), min(info.max, wz + 50), (C, C, 3, 3)).astype(w_t)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(az, a), "z"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(wz, w_t), "wz"),
        numpy_helper.from_array(np.array(0.05, np.float32), "os"),
        numpy_helper.from_array(np.array(az, a), "oz"),
        numpy_helper.from_array(np.arange(C).astype(np.int32), "b"),
        numpy_helper.from_array(np.array(0.0002, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, np.int32), "bz"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "relu"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["xq"], "xq"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "xdq"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], "wdq"),
    ]
    conv_inputs = ["xd", "wd"]
    if bias:
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], "bdq"))
        conv_inputs.append("bd")
    nodes += [
        helper.make_node("Conv", conv_inputs, ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "os", "oz"], ["cq"], "cq"),
        helper.make_node("DequantizeLinear", ["cq", "os", "oz"], ["cd"], "cdq"),
        helper.make_node("Relu", ["cd"], ["y"], "relu2"),
    ]
    return relu_to_relu(nodes, inits, f"conv_{act}_{weight}", [1, C, 8, 8], [1, C, 8, 8])


#: name -> (activation type, weight type, bias, whether the QNN session fails)
CASES = {
    "int16-uint8": ("int16", "uint8", True, True),
    "int16-uint8-no-bias": ("int16", "uint8", False, True),
    "int16-int16": ("int16", "int16", True, True),
    "uint8-int16": ("uint8", "int16", True, True),
    "int16-int8": ("int16", "int8", True, False),
    "uint16-uint8": ("uint16", "uint8", True, False),
    "uint16-int16": ("uint16", "int16", True, False),
    "int8-int16": ("int8", "int16", True, False),
    "uint8-uint8": ("uint8", "uint8", True, False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_conv_of_these_types_is_refused_after_the_layout_transform(name: str) -> None:
    act, weight, bias, fails = CASES[name]
    found = [
        d for d in lint(model(act, weight, bias), eps=["qnn"]).diagnostics if d.code == "OL512"
    ]
    assert bool(found) is fails, found
    if fails:
        assert found[0].location is not None and found[0].location.node_path == "main/conv"
        assert f"input 0: {act}, input 1: {weight}" in found[0].message


def test_htp_runs_int16_quantize_linears() -> None:
    """int16 activations with an int8 weight load, and every node runs on HTP, the int16
    QuantizeLinears included."""
    assert qnn_cpu_nodes(model("int16", "int8")) == set()


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_conv_types_on_real_qnn(qnn_available: None) -> None:
    models = {k: model(*v[:3]) for k, v in CASES.items()}
    assert_real_failures("qnn", sys.executable, models, {k: v[3] for k, v in CASES.items()})
    # where the session loads, the prediction agrees node for node (the int16 QuantizeLinears
    # on HTP); not int8-int16, whose int32 bias DequantizeLinear QNN leaves to the CPU (not
    # modelled)
    loads = [k for k, v in CASES.items() if not v[3] and k != "int8-int16"]
    check_real("qnn", sys.executable, {k: models[k] for k in loads})

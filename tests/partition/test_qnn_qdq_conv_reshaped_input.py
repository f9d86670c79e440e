"""QNN HTP takes a quantized Conv (DequantizeLinear -> Conv -> QuantizeLinear) whose
activation DequantizeLinear reads a Reshape's output in its first capability pass, and
refuses it once ORT has rewritten it to NHWC: session creation fails ("Node ... OpType:Conv
with domain:com.ms.internal.nhwc was inserted using the NHWC format as requested by
QNNExecutionProvider, but was not selected by that EP"). tf2onnx writes such a unit when it
converts an int8 TFLite model (the fourteenth held-out batch): the first Conv of a
one-channel image input (its NHWC -> NCHW Transpose is a Reshape) and EfficientNet's
squeeze-excitation Convs. Without the Reshape, or when a Relu the QuantizeLinear does not
make redundant stands between Conv and QuantizeLinear (no QDQ unit), the session loads.
OL512 reports it (``partitioning.layout_pass_failures``, ``reshaped_input_in_qdq_unit``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import real_sessions


def model(
    reshape: bool = True, relu: bool = False, dtype: int = TensorProto.INT8
) -> onnx.ModelProto:
    """x [1, 28, 28, 1] (Reshape to [1, 1, 28, 28]) or [1, 1, 28, 28] -> DequantizeLinear
    -> Conv (8 filters 3x3, quantized weight and bias) [-> Relu] -> QuantizeLinear ->
    DequantizeLinear."""
    rng = np.random.default_rng(0)
    qt = np.int8 if dtype == TensorProto.INT8 else np.uint8
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(0, qt), "zp"),
        numpy_helper.from_array(rng.integers(-100, 100, (8, 1, 3, 3)).astype(np.int8), "w"),
        numpy_helper.from_array(np.full(8, 0.01, np.float32), "ws"),
        numpy_helper.from_array(np.zeros(8, np.int8), "wzp"),
        numpy_helper.from_array(rng.integers(-100, 100, (8,)).astype(np.int32), "b"),
        numpy_helper.from_array(np.full(8, 0.0005, np.float32), "bs"),
        numpy_helper.from_array(np.zeros(8, np.int32), "bzp"),
        numpy_helper.from_array(np.array([1, 1, 28, 28], np.int64), "shape"),
    ]
    nodes = []
    src = "x"
    if reshape:
        nodes.append(helper.make_node("Reshape", ["x", "shape"], ["xr"], "reshape"))
        src = "xr"
    nodes += [
        helper.make_node("DequantizeLinear", [src, "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wzp"], ["wd"], "dq_w", axis=0),
        helper.make_node("DequantizeLinear", ["b", "bs", "bzp"], ["bd"], "dq_b", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["y"], "conv", kernel_shape=[3, 3]),
    ]
    y = "y"
    if relu:
        nodes.append(helper.make_node("Relu", ["y"], ["yr"], "relu"))
        y = "yr"
    nodes += [
        helper.make_node("QuantizeLinear", [y, "s", "zp"], ["yq"], "q_y"),
        helper.make_node("DequantizeLinear", ["yq", "s", "zp"], ["out"], "dq_out"),
    ]
    shape = [1, 28, 28, 1] if reshape else [1, 1, 28, 28]
    graph = helper.make_graph(
        nodes,
        "qdq_conv",
        [helper.make_tensor_value_info("x", dtype, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


#: name -> (model, whether the QNN session fails)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    "reshape": (model(), True),
    "reshape_uint8": (model(dtype=TensorProto.UINT8), True),
    "reshape_redundant_relu": (model(relu=True, dtype=TensorProto.UINT8), True),
    "reshape_relu_no_unit": (model(relu=True), False),
    "no_reshape": (model(reshape=False), False),
}


def _ol512(m: onnx.ModelProto) -> list[str]:
    return [d.message for d in lint(m, eps=["qnn"]).diagnostics if d.code == "OL512"]


@pytest.mark.parametrize("name", list(CASES))
def test_reshaped_activation_of_a_qdq_conv_fails_the_session(name: str) -> None:
    m, fails = CASES[name]
    found = _ol512(m)
    assert bool(found) is fails, found
    if fails:
        assert "conv" in found[0] and "reshape" in found[0]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reshaped_activation_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: m for k, (m, _) in CASES.items()})
    for name, (_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails, (name, level, r)
            if fails:
                assert "was inserted using the NHWC format" in str(r.get("error"))

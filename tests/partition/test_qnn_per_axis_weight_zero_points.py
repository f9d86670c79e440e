"""QNN HTP takes a quantized MatMul or Gemm whose weight is dequantized per channel only
with symmetric zero points: every one 0 for int8, int4 and uint4, 128 for uint8. Other zero
points keep the whole unit on the CPU (QNN's log: "Failed to add fused Matmul node."); a
per-tensor weight is taken with either. ``onnxruntime.quantization`` with ``per_channel``
and a uint4 weight type writes asymmetric zero points (the eighteenth held-out batch's
BERT). The profile's ``refused_qdq_units`` rows for MatMul and Gemm have
``per_axis_zero_points``.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .conftest import agreement, check_real, relu_to_relu

K = N = 32
#: element type -> (TensorProto type, lowest, highest)
TYPES = {
    "uint8": (TensorProto.UINT8, 0, 255),
    "int8": (TensorProto.INT8, -128, 127),
    "uint4": (TensorProto.UINT4, 0, 15),
    "int4": (TensorProto.INT4, -8, 7),
}


def _tensor(name: str, dtype: str, values: np.ndarray, dims: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TYPES[dtype][0], dims, [int(v) for v in values.reshape(-1)])


def model(op: str, weight: str, zero_points: str) -> onnx.ModelProto:
    """Relu -> Q -> DQ (uint8) and DQ (a [K, N] ``weight``-typed constant, per channel on
    axis 1) -> ``op`` -> Q -> DQ -> Relu. ``zero_points``: ``zero`` (all 0), ``mid`` (all
    the type's middle value) or ``vary`` (random), or ``per_tensor`` (one, 0)."""
    rng = np.random.default_rng(0)
    _, lo, hi = TYPES[weight]
    w = rng.integers(lo, hi + 1, (K, N))
    if zero_points == "per_tensor":
        scale = numpy_helper.from_array(np.array(0.01, np.float32), "ws")
        zp = _tensor("wz", weight, np.array([0]), [])
        attrs: dict[str, int] = {}
    else:
        scale = numpy_helper.from_array(np.full((N,), 0.01, np.float32), "ws")
        values = {
            "zero": np.zeros(N, np.int64),
            "mid": np.full(N, (lo + hi + 1) // 2),
            "vary": rng.integers(lo, hi + 1, (N,)),
        }[zero_points]
        zp = _tensor("wz", weight, values, [N])
        attrs = {"axis": 1}
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "z"),
        _tensor("w", weight, w, [K, N]), scale, zp,
        numpy_helper.from_array(np.array(0.05, np.float32), "os"),
        numpy_helper.from_array(np.array(128, np.uint8), "oz"),
    ]  # fmt: skip
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "relu"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["xq"], "xq"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "xdq"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], "wdq", **attrs),
        helper.make_node(op, ["xd", "wd"], ["c"], "mm"),
        helper.make_node("QuantizeLinear", ["c", "os", "oz"], ["cq"], "cq"),
        helper.make_node("DequantizeLinear", ["cq", "os", "oz"], ["cd"], "cdq"),
        helper.make_node("Relu", ["cd"], ["y"], "relu2"),
    ]
    rows = [1, 8] if op == "MatMul" else [8]
    return relu_to_relu(nodes, inits, f"{op}_{weight}_{zero_points}", [*rows, K], [*rows, N])


#: name -> (op, weight type, zero points, whether QNN keeps the unit on the CPU)
CASES = {
    "matmul-int8-zero": ("MatMul", "int8", "zero", False),
    "matmul-int8-vary": ("MatMul", "int8", "vary", True),
    "matmul-int4-zero": ("MatMul", "int4", "zero", False),
    "matmul-int4-vary": ("MatMul", "int4", "vary", True),
    "matmul-uint4-zero": ("MatMul", "uint4", "zero", False),
    "matmul-uint4-mid": ("MatMul", "uint4", "mid", True),
    "matmul-uint8-mid": ("MatMul", "uint8", "mid", False),
    "matmul-uint8-zero": ("MatMul", "uint8", "zero", True),
    "matmul-uint8-per-tensor": ("MatMul", "uint8", "per_tensor", False),
    "gemm-uint8-zero": ("Gemm", "uint8", "zero", True),
    "gemm-uint8-mid": ("Gemm", "uint8", "mid", False),
    "gemm-uint4-mid": ("Gemm", "uint4", "mid", True),
}

UNIT = ("xdq", "wdq", "mm", "cq")


@pytest.mark.parametrize("name", list(CASES))
def test_a_per_channel_weight_with_asymmetric_zero_points_stays_on_the_cpu(name: str) -> None:
    op, weight, zps, refused = CASES[name]
    plans = agreement.predict(model(op, weight, zps), "qnn")
    for level in ("disabled", "basic"):
        where = plans[level].node_ep
        on_cpu = {n for n in UNIT if where.get(f"main/{n}") != "QNNExecutionProvider"}
        assert on_cpu == (set(UNIT) if refused else set()), (level, where)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_per_channel_weight_zero_points_on_real_qnn(qnn_available: None) -> None:
    check_real("qnn", sys.executable, {k: model(*v[:3]) for k, v in CASES.items()})

"""QNN HTP leaves a DequantizeLinear with per-channel or blocked scales to the CPU when
it is no part of a QDQ node unit ("QNN EP does not support a standalone DQ op with
per-channel quantization"; issue #16, third held-out batch: the int4 block-wise QDQ form
of MatMulNBits, DequantizeLinear -> float MatMul). The MatMul runs on HTP; a
DequantizeLinear with a scalar scale runs there with it. The profile says so in
``partitioning.refused_qdq_units`` (``per_axis_scale``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
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
K, N = 64, 32


def dq_matmul(scale: str) -> onnx.ModelProto:
    """Relu -> MatMul(x, DequantizeLinear(constant weight)) -> Relu. ``scale``:
    ``int4_blocked`` (block_size 32 on axis 0), ``int8_blocked``, ``int8_per_channel``
    (axis 1) or ``int8_per_tensor``."""
    rng = np.random.default_rng(0)
    attrs: dict[str, int] = {}
    if scale.startswith("int4"):
        w = helper.make_tensor("w", TensorProto.INT4, [K, N], rng.integers(-8, 8, K * N).tolist())
    else:
        w = numpy_helper.from_array(rng.integers(-50, 50, (K, N)).astype(np.int8), "w")
    if scale.endswith("blocked"):
        s = np.full((K // 32, N), 0.01, np.float32)
        attrs = {"axis": 0, "block_size": 32}
    elif scale.endswith("per_channel"):
        s = np.full((N,), 0.01, np.float32)
        attrs = {"axis": 1}
    else:
        s = np.array(0.01, np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            helper.make_node("DequantizeLinear", ["w", "s"], ["wd"], "dq", **attrs),
            helper.make_node("MatMul", ["x", "wd"], ["m"], "mm"),
            helper.make_node("Relu", ["m"], ["y"], "post"),
        ],
        f"dq_matmul_{scale}",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [4, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, N])],
        [w, numpy_helper.from_array(s, "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def q_dq(scale: str) -> onnx.ModelProto:
    """Relu -> QuantizeLinear (uint8) -> DequantizeLinear -> Relu on an activation, as NNCF
    writes the per-channel scales it unifies across a Concat: ``per_channel`` (axis 1, one
    scale per channel) or ``per_tensor``. No op between the pair, so neither is in a unit."""
    c = 8
    if scale == "per_channel":
        s, z, attrs = np.full((c,), 0.02, np.float32), np.zeros((c,), np.uint8), {"axis": 1}
    else:
        s, z, attrs = np.array(0.02, np.float32), np.array(0, np.uint8), {}
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "q", **attrs),
            helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "dq", **attrs),
            helper.make_node("Relu", ["xd"], ["y"], "post"),
        ],
        f"q_dq_{scale}",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, c, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 4, 4])],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(z, "z")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("scale", ["int4_blocked", "int8_blocked", "int8_per_channel"])
def test_a_standalone_per_axis_dq_stays_on_cpu(scale: str) -> None:
    plan = partitions(dq_matmul(scale), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dq"] == CPU_EP
    assert plan.node_ep["main/mm"] == QNN


def test_a_per_tensor_dq_runs_with_its_reader() -> None:
    plan = partitions(dq_matmul("int8_per_tensor"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dq"] == QNN


def test_a_standalone_per_channel_q_stays_on_cpu() -> None:
    """NNCF's per-channel activation QuantizeLinear (held-out batch 16, ShuffleNetV2's
    Concat inputs): QNN logs "QNN EP does not support a standalone Q op with per-channel
    quantization" and leaves it, and its DequantizeLinear, to the CPU."""
    plan = partitions(q_dq("per_channel"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/q"] == CPU_EP
    assert plan.node_ep["main/dq"] == CPU_EP


def test_a_per_tensor_q_dq_pair_runs_on_qnn() -> None:
    plan = partitions(q_dq("per_tensor"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/q"] == QNN
    assert plan.node_ep["main/dq"] == QNN


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_standalone_q_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {k: q_dq(k) for k in ("per_channel", "per_tensor")})


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_standalone_dq_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {
        k: dq_matmul(k)
        for k in ("int4_blocked", "int8_blocked", "int8_per_channel", "int8_per_tensor")
    }
    check_real("qnn", sys.executable, models)

"""QNN takes a Conv in its first capability pass without building it; ORT rewrites it to
NHWC and asks again, and a Conv the HTP backend rejects then has no EP: session creation
fails ("... inserted using the NHWC format as requested by QNNExecutionProvider, but was
not selected by that EP"; issue #16: QDQ exports whose shared biases reach the Conv
through an Identity, and a speech model whose fixed dims make a Conv's output empty).
The profile lists the conditions in ``partitioning.layout_pass_failures``; OL512 reports
them on the partition plan of each graph level.

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

from .conftest import partitions, real_sessions


def qdq_conv(bias: str) -> onnx.ModelProto:
    """x -> Q/DQ (uint8) -> Conv(DQ int8 weight, bias) -> Q/DQ -> y. ``bias`` is ``dq`` (the
    int32 bias DQ feeds the Conv), ``identity`` (an Identity of that DQ feeds it) or
    ``float`` (a float initializer)."""
    rng = np.random.RandomState(0)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array(rng.randint(-100, 100, (4, 2, 3, 3)).astype(np.int8), "wq"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wzp"),
        numpy_helper.from_array(np.arange(4).astype(np.int32), "bq"),
        numpy_helper.from_array(np.array(0.0002, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, np.int32), "bzp"),
        numpy_helper.from_array(np.arange(4).astype(np.float32) * 0.01, "bf"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["w"], "dq_w"),
    ]
    if bias == "float":
        b = "bf"
    else:
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs", "bzp"], ["bd"], "dq_b"))
        b = "bd"
        if bias == "identity":
            nodes.append(helper.make_node("Identity", ["bd"], ["bi"], "id_b"))
            b = "bi"
    nodes += [
        helper.make_node("Conv", ["xd", "w", b], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "s", "zp"], ["cq"], "q_c"),
        helper.make_node("DequantizeLinear", ["cq", "s", "zp"], ["y"], "dq_c"),
    ]
    graph = helper.make_graph(
        nodes,
        f"qdq_conv_{bias}_bias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        inits,
    )
    return _model(graph)


def strided_conv(length: int, rank: int = 3) -> onnx.ModelProto:
    """Relu(x) -> Conv(kernel 256, stride 128) over ``length`` samples: the output is empty
    when ``length`` is shorter than the kernel."""
    out = max((length - 256) // 128 + 1, 0)
    ones = [1] * (rank - 3)  # spatial dims before the last (none for a 1-D Conv)
    w = np.random.RandomState(0).randn(8, 1, *ones, 256).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], "relu"),
            helper.make_node("Conv", ["r", "w"], ["y"], "conv", strides=[*ones, 128]),
        ],
        f"conv_{length}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, *ones, length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, *ones, out])],
        [numpy_helper.from_array(w, "w")],
    )
    return _model(graph)


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: name -> (model, whether the session fails with optimizations disabled / at level 1)
CASES: dict[str, tuple[onnx.ModelProto, tuple[bool, bool]]] = {
    "identity_bias": (qdq_conv("identity"), (True, False)),
    "dq_bias": (qdq_conv("dq"), (False, False)),
    "float_bias": (qdq_conv("float"), (False, False)),
    "conv1d_empty": (strided_conv(72), (True, True)),
    "conv2d_empty": (strided_conv(72, rank=4), (True, True)),
    "conv1d_long": (strided_conv(512), (False, False)),
}


def _ol512(model: onnx.ModelProto) -> list[str]:
    return [
        d.location.node_name or ""
        for d in lint(model, eps=["qnn"]).diagnostics
        if d.code == "OL512"
    ]


@pytest.mark.parametrize("name", list(CASES))
def test_ol512_reports_the_conv_exactly_when_a_level_fails(name: str) -> None:
    model, fails = CASES[name]
    assert _ol512(model) == (["conv"] if any(fails) else [])


@pytest.mark.parametrize("name", list(CASES))
def test_the_plan_of_each_level_marks_the_conv(name: str) -> None:
    model, fails = CASES[name]
    parts = partitions(model, ["qnn"])
    for level, level_fails in zip(("exported", "optimized"), fails, strict=True):
        plan = parts.plan(level)
        assert plan is not None
        marked = [p for p in plan.layout_failures if p.endswith("conv")]
        assert bool(marked) is level_fails, (level, plan.layout_failures)


def test_the_message_names_the_cause() -> None:
    [d] = [d for d in lint(qdq_conv("identity"), eps=["qnn"]).diagnostics if d.code == "OL512"]
    assert "computed by Identity id_b" in d.message
    [d] = [d for d in lint(strided_conv(72), eps=["qnn"]).diagnostics if d.code == "OL512"]
    assert "zero-sized dimension [1, 8, 0]" in d.message, d.message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_layout_pass_failures_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    levels = ("disabled", "basic")
    real = real_sessions("qnn", sys.executable, {name: m for name, (m, _) in CASES.items()})
    for name, (_, fails) in CASES.items():
        for level, level_fails in zip(levels, fails, strict=True):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is level_fails, (name, level, r)
            if level_fails:
                assert "was not selected by that EP" in str(r.get("error")), r

"""An 8-bit QDQ Add or Mul of an activation by a requantized constant (a QuantizeLinear of
a float Constant, then its DequantizeLinear) fails to compile on OpenVINO CPU with
optimizations disabled (``test_openvino_requantized.py``), except when the activation is
broadcast along axis 1 of the output, OpenVINO's channel axis: a Stable Diffusion UNet's
timestep embedding (``/m/time_proj/Mul``) multiplies the [1, 1] timestep by its [1, 16]
frequencies, and the thirteenth held-out batch's 8-bit QDQ UNet loads at both levels.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU); the profile's
``except_channel_broadcast`` on the non-scalar Add and Mul entries (provenance
ov-requantized-uint8-source) says it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import openvino_runner, real_sessions


def model(op: str, x_shape: list[int], producer: str, c_shape: list[int]) -> onnx.ModelProto:
    """``op``(DQ(Q(producer(x))), DQ(Q(Constant c))) -> Q -> DQ, uint8; ``producer``
    "Relu", or "Unsqueeze" (x: [1] -> [1, 1], then a Cast, as the timestep embedding)."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def init(name: str, value: object, dtype: object = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))  # type: ignore[call-overload]
        return name

    def qdq(v: str, scale: float = 0.02, zero: int = 128) -> str:
        s, z = init(f"{v}_s", scale), init(f"{v}_z", zero, np.uint8)
        nodes.append(helper.make_node("QuantizeLinear", [v, s, z], [f"{v}_q"], f"{v}_Q"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{v}_q", s, z], [f"{v}_dq"], f"{v}_DQ"))  # fmt: skip
        return f"{v}_dq"

    if producer == "Unsqueeze":
        nodes.append(helper.make_node("Unsqueeze", ["x", init("axes", [1], np.int64)], ["u"], "u"))
        nodes.append(helper.make_node("Cast", ["u"], ["act"], "act", to=TensorProto.FLOAT))
        act_shape = [*x_shape, 1]
    else:
        nodes.append(helper.make_node(producer, ["x"], ["act"], "act"))
        act_shape = x_shape
    value = np.random.default_rng(0).random(c_shape).astype(np.float32)
    nodes.append(helper.make_node("Constant", [], ["c"], "c", value=numpy_helper.from_array(value)))
    nodes.append(helper.make_node(op, [qdq("act"), qdq("c", 0.01, 0)], ["m"], "the_op"))
    nodes.append(helper.make_node("Identity", [qdq("m")], ["y"], "out"))
    out = list(np.broadcast_shapes(tuple(act_shape), tuple(c_shape)))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits,
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m


#: name -> (model, whether the session fails with optimizations disabled)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    "mul_timestep": (model("Mul", [1], "Unsqueeze", [1, 16]), False),
    "mul_timestep_vector": (model("Mul", [1], "Unsqueeze", [16]), False),
    "add_timestep": (model("Add", [1], "Unsqueeze", [1, 16]), False),
    "mul_relu_channel_broadcast": (model("Mul", [1, 1], "Relu", [1, 16]), False),
    "add_relu_channel_broadcast": (model("Add", [1, 1], "Relu", [1, 16]), False),
    "mul_relu_rank3_channel_broadcast": (model("Mul", [4, 1, 1], "Relu", [4, 8, 1]), False),
    # not broadcast along axis 1: the failure stays
    "mul_relu_same_shape": (model("Mul", [1, 16], "Relu", [1, 16]), True),
    "add_relu_same_shape": (model("Add", [1, 16], "Relu", [1, 16]), True),
    "mul_relu_batch_broadcast": (model("Mul", [1, 1, 16], "Relu", [4, 1, 16]), True),
}


@pytest.mark.parametrize("name", CASES)
def test_channel_broadcast_activation_loads(name: str) -> None:
    m, fails = CASES[name]
    report = lint(m, eps=["openvino"], what_if=False)
    found = [d for d in report.diagnostics if d.code == "OL506"]
    assert bool(found) is fails, [d.message for d in found]
    if fails:
        assert found[0].location.node_name == "the_op"


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_channel_broadcast_activation_on_real_openvino() -> None:
    real = real_sessions(
        "openvino", str(openvino_runner()), {k: m for k, (m, _) in CASES.items()}, 300
    )
    for name, (_, fails) in CASES.items():
        r = real[f"{name}|disabled"]
        assert (not r.get("ok")) is fails, (name, r)
        assert real[f"{name}|basic"].get("ok"), (name, real[f"{name}|basic"])

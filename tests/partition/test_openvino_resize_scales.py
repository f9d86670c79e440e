"""OpenVINO CPU fails to compile a Resize whose scales come from a DequantizeLinear when a
batch or channel scale, as dequantized, does not give that axis a whole size ('Interpolate
node with name ... only supports resize on spatial dimensions(depth, height and width)').
QNN's quantization config (``get_qnn_qdq_config``) quantizes a Resize's scales: a
Stable Diffusion UNet's or VAE decoder's nearest upsampler, scales [1, 1, 2, 2], quantized to
uint16 with the scale 2 / 65535, dequantizes to [1.0000153, 1.0000153, 2, 2] (thirteenth
held-out batch: ``/m/up_blocks.0/upsamplers.0/Resize``).

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels; the profile's
Resize constraint ``whole_dequantized_scales`` (provenance ov-resize-dequantized-scales)
says it, and OL506 reports it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import openvino_runner, real_sessions

_NP = {"uint16": np.uint16, "uint8": np.uint8}


def model(
    scales: list[float], qtype: str = "uint16", domain: str = "com.microsoft", qscale: float = 0.0
) -> onnx.ModelProto:
    """x: float[1, 4, 8, 8] -> Q/DQ -> Resize(nearest, scales) -> Q/DQ. ``qscale``: the
    quantization scale of the scales (0: the quantizer's max / range; None-like -1: the
    scales stay a float constant)."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    top = float(np.iinfo(_NP[qtype]).max)

    def qdq(v: str, s: float) -> str:
        inits.append(numpy_helper.from_array(np.asarray(s, np.float32), f"{v}_s"))
        inits.append(numpy_helper.from_array(np.asarray(0, _NP[qtype]), f"{v}_z"))
        q, zs = f"{v}_q", [f"{v}_s", f"{v}_z"]
        nodes.append(helper.make_node("QuantizeLinear", [v, *zs], [q], f"{v}_Q", domain=domain))
        nodes.append(helper.make_node("DequantizeLinear", [q, *zs], [f"{v}_dq"], f"{v}_DQ", domain=domain))  # fmt: skip
        return f"{v}_dq"

    sc = np.asarray(scales, np.float32)
    value = numpy_helper.from_array(sc)
    nodes.append(helper.make_node("Constant", [], ["scales"], "scales_c", value=value))
    x = qdq("x", 1.0 / top)
    s = "scales" if qscale < 0 else qdq("scales", qscale or float(sc.max()) / top)
    nodes.append(
        helper.make_node("Resize", [x, "", s], ["r"], "the_resize", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    )  # fmt: skip
    nodes.append(helper.make_node("Identity", [qdq("r", 1.0 / top)], ["y"], "out"))
    out = [1, int(4 * sc[1]), int(8 * sc[2]), int(8 * sc[3])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits,
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21 if not domain else 17)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    m = helper.make_model(graph, opset_imports=opsets)
    m.ir_version = 10
    return m


#: name -> (model, whether the session fails)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    # the quantizer's scale: [1.0000153, 1.0000153, 2, 2] and [0.99607843, 0.99607843, 2, 2]
    "u16_microsoft": (model([1, 1, 2, 2]), True),
    "u16_onnx": (model([1, 1, 2, 2], domain=""), True),
    "u8_onnx": (model([1, 1, 2, 2], "uint8", ""), True),
    # a quantization scale that keeps the batch and channel sizes whole
    "u16_exact_ones": (model([1, 1, 3, 3]), False),
    "u16_spatial_off": (model([1, 1, 2, 2], qscale=1 / 32768), False),  # [1, 1, 1.99997, ..]
    "u16_exact_channels": (model([1, 2, 2, 2], qscale=2 / 65534), False),
    "u16_channel_half": (model([1, 1.5, 1.5, 1.5], qscale=1.5 / 49152), False),  # 4 x 1.5
    # float scales off 1 load: OpenVINO folds them into the output sizes
    "float_off_one": (model([1, 1.0000153, 2, 2], qscale=-1), False),
    "float_channels": (model([1, 2, 2, 2], qscale=-1), False),
}


@pytest.mark.parametrize("name", CASES)
def test_quantized_resize_scales_off_whole_sizes_are_flagged(name: str) -> None:
    m, fails = CASES[name]
    report = lint(m, eps=["openvino"], what_if=False)
    found = [d for d in report.diagnostics if d.code == "OL506"]
    assert bool(found) is fails, [d.message for d in found]
    if fails:
        (d,) = found
        assert d.location.node_name == "the_resize"
        assert "is not a whole size" in d.message, d.message


def test_other_eps_are_not_affected() -> None:
    report = lint(CASES["u16_microsoft"][0], eps=["cpu"], what_if=False)
    assert not [d for d in report.diagnostics if d.code == "OL506"]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_quantized_resize_scales_on_real_openvino() -> None:
    real = real_sessions(
        "openvino", str(openvino_runner()), {k: m for k, (m, _) in CASES.items()}, 300
    )
    for name, (_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails, (name, level, r)
            if fails:
                assert "openvino" in str(r.get("error")).lower(), r  # the runner shortens it

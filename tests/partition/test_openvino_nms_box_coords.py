"""OpenVINO's CPU plug-in compiles a NonMaxSuppression only when it knows that the boxes'
last dim is 4 ('NonMaxSuppression node ... has unsupported 'boxes' input 3rd dimension
size'). It works the dim out through the partition (from static graph inputs and
weights), not from a tensor that enters the partition with that dim unknown: a graph
input ``float[1,N,M]`` or a Reshape to a shape given as a graph input. torchvision's
batched NMS (twenty-first held-out batch: RetinaNet, FCOS, the R-CNNs) runs in an If
branch that reads boxes concatenated in the graph around it; at the disabled level the
partition holding that If starts after CPU nodes, and the session fails.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels; the
one-link chain is the profile's ``partitioning.finalize_failures`` entry (provenance
ov-nms-box-coords) and OL513 reports it.
"""

from __future__ import annotations

import onnx
import pytest

from .conftest import assert_real_failures, compile_failures, openvino_runner

_HEAD = """\
<ir_version: 8, opset_import: ["" : 17]>
g ({ins}) => (int64[K,3] y) {{
    mo = Constant <value = int64[1] {{10}}> ()
    io = Constant <value = float[1] {{0.5}}> ()
    so = Constant <value = float[1] {{0.0}}> ()
    z = Constant <value = int64[1] {{0}}> ()
    one = Constant <value = int64[1] {{1}}> ()
    ez = Constant <value = int64[0,3] {{}}> ()
{body}
}}
"""
# torchvision's batched NMS: the NMS in an If branch, its boxes from the graph around it
_IF = """    b1 = Relu(b)
    b2 = Unsqueeze(b1, z)
    y = If(c) <then_branch = t () => (int64[K,3] r) {
        r = NonMaxSuppression(b2, s, mo, io, so)
    }, else_branch = e () => (int64[K,3] r) {
        r = Identity(ez)
    }>"""
_ADD = "    o1 = Unsqueeze(o, one)\n    b1 = Add(b, o1)\n    b2 = Unsqueeze(b1, z)"
_NMS = "\n    y = NonMaxSuppression(b2, s, mo, io, so)"

#: name -> (inputs, body, whether the session fails)
CASES: dict[str, tuple[str, str, bool]] = {
    "static": ("float[1,N,4] b, float[1,1,N] s", "    b2 = Relu(b)" + _NMS, False),
    "unsqueezed_static": ("float[N,4] b, float[1,1,N] s", "    b1 = Relu(b)\n    b2 = Unsqueeze(b1, z)" + _NMS, False),
    "offsets_static": ("float[N,4] b, float[N] o, float[1,1,N] s", _ADD + _NMS, False),
    "input_dynamic_last": ("float[1,N,M] b, float[1,1,N] s", "    b2 = Relu(b)" + _NMS, True),
    "reshape_to_input_shape": ("float[N,4] b, float[1,1,N] s, int64[3] shp",
                               "    b1 = Relu(b)\n    b2 = Reshape(b1, shp)" + _NMS, True),
    "offsets_dynamic_last": ("float[N,M] b, float[N] o, float[1,1,N] s", _ADD + _NMS, True),
    "if_branch_static": ("float[N,4] b, float[1,1,N] s, bool c", _IF, False),
    "if_branch_dynamic_last": ("float[N,M] b, float[1,1,N] s, bool c", _IF, True),
}  # fmt: skip


def model(case: str) -> onnx.ModelProto:
    ins, body, _ = CASES[case]
    return onnx.parser.parse_model(_HEAD.format(ins=ins, body=body))


@pytest.mark.parametrize("case", CASES)
def test_nms_boxes_of_unknown_coordinates_are_flagged(case: str) -> None:
    found = compile_failures(model(case), "openvino")
    assert bool(found) is CASES[case][2], (case, found)
    if found:
        assert "NonMaxSuppression" in found[0] and "last dim" in found[0]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_nms_boxes_of_unknown_coordinates_on_real_openvino() -> None:
    models = {c: model(c) for c in CASES}
    assert_real_failures(
        "openvino", str(openvino_runner()), models, {c: v[-1] for c, v in CASES.items()}
    )

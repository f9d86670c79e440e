"""OpenVINO CPU fails to compile a subgraph holding ``Transpose -> Slice -> GatherElements``
where the GatherElements gathers along an axis the Slice does not slice: its plug-in
validates the GatherElements against the Transpose's whole output ('Check
output_shape.merge_into(output_shape, indices_pshape) failed at
gather_elements_shape_inference.hpp'). A GatherElements along the sliced axis, or the same
Slice and GatherElements without the Transpose, compile. Ultralytics' YOLO26 pose export
with its NMS-free head (``nms=False``, twelfth held-out batch) has the pattern:
``/model.23/Slice_4`` of the transposed predictions feeds ``/model.23/GatherElements_2``.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels; the chain is the
profile's ``partitioning.finalize_failures`` entry (provenance
ov-gatherelements-sliced-transpose) and OL513 reports it.
"""

from __future__ import annotations

import onnx
import pytest

from .conftest import assert_real_failures, compile_failures, openvino_runner

_HEAD = """\
<ir_version: 8, opset_import: ["" : 17]>
g ({ins}) => ({outs}) {{
    s0 = Constant <value = int64[1] {{0}}> ()
    e0 = Constant <value = int64[1] {{4}}> ()
    ax = Constant <value = int64[1] {{{slice_axis}}}> ()
{body}
}}
"""
_IN = "float[1,135,84] x, int64[1,84,4] idx"
_OUT = "float[1,84,4] y"

#: name -> (inputs, outputs, Slice axis, body, whether the session fails)
CASES: dict[str, tuple[str, str, int, str, bool]] = {
    "gather_anchor_axis": (_IN, _OUT, -1, """\
    t = Transpose <perm = [0,2,1]> (x)
    sl = Slice(t, s0, e0, ax)
    y = GatherElements <axis = 1> (sl, idx)""", True),
    "positive_slice_axis": (_IN, _OUT, 2, """\
    t = Transpose <perm = [0,2,1]> (x)
    sl = Slice(t, s0, e0, ax)
    y = GatherElements <axis = 1> (sl, idx)""", True),
    "slice_axis_1": ("float[1,84,135] x, int64[1,4,84] idx", "float[1,4,84] y", 1, """\
    t = Transpose <perm = [0,2,1]> (x)
    sl = Slice(t, s0, e0, ax)
    y = GatherElements <axis = 2> (sl, idx)""", True),
    "gather_sliced_axis": (_IN, _OUT, -1, """\
    t = Transpose <perm = [0,2,1]> (x)
    sl = Slice(t, s0, e0, ax)
    y = GatherElements <axis = 2> (sl, idx)""", False),
    "no_transpose": ("float[1,84,135] x, int64[1,84,4] idx", _OUT, -1, """\
    sl = Slice(x, s0, e0, ax)
    y = GatherElements <axis = 1> (sl, idx)""", False),
    "relu_after_slice": (_IN, _OUT, -1, """\
    t = Transpose <perm = [0,2,1]> (x)
    sl = Slice(t, s0, e0, ax)
    y = Relu(sl)""", False),
}  # fmt: skip


def model(case: str) -> onnx.ModelProto:
    ins, outs, axis, body, _ = CASES[case]
    return onnx.parser.parse_model(_HEAD.format(ins=ins, outs=outs, slice_axis=axis, body=body))


@pytest.mark.parametrize("case", CASES)
def test_sliced_transpose_gather_elements_is_flagged(case: str) -> None:
    found = compile_failures(model(case), "openvino")
    assert bool(found) is CASES[case][4], (case, found)


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_sliced_transpose_gather_elements_on_real_openvino() -> None:
    models = {c: model(c) for c in CASES}
    assert_real_failures(
        "openvino", str(openvino_runner()), models, {c: v[-1] for c, v in CASES.items()}
    )

"""OpenVINO CPU fails to compile a subgraph holding a Squeeze with no axes of a tensor
with a dynamic dim: OpenVINO gives its output a dynamic rank, and the CPU plug-in refuses
the node ('CPU plug-in doesn't support Squeeze operation with dynamic rank'). A Squeeze
with axes, or of a static tensor, compiles. hummingbird-ml's GEMM compilation of a tree
ensemble at opset 11 (fifteenth held-out batch) squeezes its ``[trees, 1, batch]`` output
that way (``/_operators.0/Squeeze``).

Measured with onnxruntime-openvino 1.24.1 (device_type CPU) at both levels; the one-link
chain is the profile's ``partitioning.finalize_failures`` entry (provenance
ov-squeeze-dynamic-rank) and OL513 reports it.
"""

from __future__ import annotations

import onnx
import pytest

from .conftest import assert_real_failures, compile_failures, openvino_runner

_HEAD = """\
<ir_version: 8, opset_import: ["" : {opset}]>
g ({ins}) => ({outs}) {{
{body}
}}
"""
_NO_AXES = "    a = Relu(x)\n    s = Squeeze(a)\n    y = Relu(s)"

#: name -> (opset, inputs, outputs, body, whether the session fails)
CASES: dict[str, tuple[int, str, str, str, bool]] = {
    "no_axes_dynamic_batch": (11, "float[N,1,4] x", "float[M] y", _NO_AXES, True),
    "no_axes_input_opset13": (13, "float[N,1,4] x", "float[M] y", _NO_AXES, True),
    "no_axes_dynamic_last_dim": (11, "float[1,1,N] x", "float[M] y", _NO_AXES, True),
    "no_axes_last_node": (11, "float[N,1,4] x", "float[M] y", "    a = Relu(x)\n    y = Squeeze(a)", True),
    "no_axes_static": (11, "float[2,1,4] x", "float[2,4] y", _NO_AXES, False),
    "axes_dynamic_batch": (11, "float[N,1,4] x", "float[N,4] y",
                           "    a = Relu(x)\n    s = Squeeze <axes = [1]> (a)\n    y = Relu(s)", False),
}  # fmt: skip


def model(case: str) -> onnx.ModelProto:
    opset, ins, outs, body, _ = CASES[case]
    return onnx.parser.parse_model(_HEAD.format(opset=opset, ins=ins, outs=outs, body=body))


@pytest.mark.parametrize("case", CASES)
def test_squeeze_of_dynamic_dims_is_flagged(case: str) -> None:
    found = compile_failures(model(case), "openvino")
    assert bool(found) is CASES[case][4], (case, found)
    if found:
        assert "Squeeze" in found[0] and "dynamic rank" in found[0]


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_squeeze_of_dynamic_dims_on_real_openvino() -> None:
    models = {c: model(c) for c in CASES}
    assert_real_failures(
        "openvino", str(openvino_runner()), models, {c: v[-1] for c, v in CASES.items()}
    )

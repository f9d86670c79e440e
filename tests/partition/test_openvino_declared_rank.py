"""OpenVINO keeps the rank of a GreaterOrEqual/LessOrEqual (opsets 12-15) output that
reaches its next subgraph when the model declares a rank for that tensor, or for one on
the way to it, in ``value_info``: ORT hands the subgraph the declared type (issue #16,
third held-out batch: ``convert_float_to_float16`` and ``quantize_dynamic`` write
``value_info`` for every tensor, and their op-13/op-14 BERT models load on OpenVINO with
optimizations disabled although the attention mask's GreaterOrEqual output crosses two
subgraphs; OL509 flagged them). Without a declared rank, or with a declared type that
has no shape, the session fails as before.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU).
"""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.analyses.partition import Partitions
from onnxlint.rules.ep_partitions import EpUnknownRankInput

from .conftest import context, openvino_runner, real_sessions

# a CPU ConstantOfShape (rank-0 output) cuts the comparison's subgraph from the next one
RANK_LOST = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,2,8,8] x, float[1,1,8,1] z) => (float[1,2,8,8] y) {
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {1}> (e)
    c2 = Constant <value = float {0}> ()
    ge = GreaterOrEqual(z, c2)
    cb = Cast <to = 1> (ge)
    a = Mul(s, cb)
    b = Add(x, a)
    y = Softmax <axis = -1> (b)
}
"""

#: name -> (value_info entries: tensor, element type, shape), whether the session fails
CASES: dict[str, tuple[list[tuple[str, int, list | None]], bool]] = {
    "none": ([], True),
    "comparison": ([("ge", TensorProto.BOOL, [1, 1, 8, 1])], False),
    "crossing": ([("cb", TensorProto.FLOAT, [1, 1, 8, 1])], False),
    "symbolic": ([("ge", TensorProto.BOOL, ["a", "b", "c", "d"])], False),
    "no_shape": ([("ge", TensorProto.BOOL, None)], True),
}


def model(case: str) -> onnx.ModelProto:
    m = onnx.parser.parse_model(RANK_LOST)
    for name, elem, shape in CASES[case][0]:
        m.graph.value_info.append(helper.make_tensor_value_info(name, elem, shape))
    return m


@pytest.mark.parametrize("case", CASES)
def test_a_declared_rank_keeps_the_comparison_output_rank(case: str) -> None:
    ctx = context(model(case), ["openvino"])
    ctx.analysis(Partitions)
    EpUnknownRankInput().check_model(ctx)
    found = [(d.message_id, d.args["tensor"]) for d in ctx.diagnostics if d.code == "OL509"]
    assert found == ([("rank_lost", "cb")] if CASES[case][1] else []), case


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_declared_rank_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {c: model(c) for c in CASES})
    for case, (_, fails) in CASES.items():
        r = real[f"{case}|disabled"]
        assert (not r.get("ok")) is fails, (case, r)
        assert real[f"{case}|basic"].get("ok"), (case, real[f"{case}|basic"])

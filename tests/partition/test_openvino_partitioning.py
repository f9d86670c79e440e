"""OpenVINO CPU partitioning classes found on the real-world corpus (issue #16).

Each class has a fast test on a hand-built model (no EP) and, marked ``ort_openvino``,
the same model against the real OpenVINO runner (onnxruntime-openvino 1.24.1, CPU).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import onnx
import pytest

from onnxlint.analyses.partition import Partitions
from onnxlint.rules.ep_partitions import EpClaimedBodyPartition, EpUnknownRankInput

from .conftest import agreement, check_real, context, openvino_runner, partitions

OV = "OpenVINOExecutionProvider"

# ORT's topological order visits the highest-index input of a node first. The refused
# scalar ConstantOfShape between the two producers of Mul cuts OpenVINO's order:
# [Tanh, Abs] before the cut, [Mul, Add, Sigmoid, Relu, Relu] after it (measured).
ORDER_CUT = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,8] x) => (float[1,8] y) {
    a1 = Relu(x)
    a2 = Sigmoid(a1)
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {0.5}> (e)
    b1 = Tanh(x)
    b2 = Abs(b1)
    m = Mul(s, b2)
    z = Add(m, a2)
    y = Relu(z)
}
"""

# A cluster fed only by initializers (Add + Relu of constants) is still an OpenVINO
# subgraph: its initializers are subgraph inputs too (measured).
CONSTANT_CLUSTER = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,2,8,8] x) => (float[1,2,8,8] y) {
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {1}> (e)
    c1 = Constant <value = float[1,1,8,1] {0,1,2,3,4,5,6,7}> ()
    c2 = Constant <value = float {0}> ()
    ge = Add(c1, c2)
    cb = Relu(ge)
    a = Mul(s, cb)
    b = Add(x, a)
    y = Relu(b)
}
"""

# Single-node clusters: OpenVINO drops one only when a later cluster follows in ORT's order,
# so the last stays (measured: Neg goes back to CPU, Sigmoid runs on OpenVINO; the Abs
# between the float64 Casts is refused, which cuts the graph). With two Relus before the
# cut both clusters stay.
SINGLES = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {{
    a = Neg(x)
    {extra}
    d = Cast <to = 11> ({last})
    e = Abs(d)
    f = Cast <to = 1> (e)
    y = Sigmoid(f)
}}
"""
LAST_SINGLE = SINGLES.format(extra="", last="a")
TWO_THEN_LAST_SINGLE = SINGLES.format(extra="r = Relu(a)", last="r")


# GreaterOrEqual/LessOrEqual of opsets 12-15: a tensor computed from one in one OpenVINO
# subgraph reaches the next as a Parameter of dynamic rank (the Softmax after it fails in
# the frontend at opset 12, in SoftmaxDecomposition at 13-15); at opset 16 it keeps its rank
RANK_LOST = """\
<ir_version: 8, opset_import: ["" : {opset}]>
g (float[1,2,8,8] x, float[1,1,8,1] z) => (float[1,2,8,8] y) {{
    e = Constant <value = int64[0] {{}}> ()
    s = ConstantOfShape <value = float[1] {{1}}> (e)
    c2 = Constant <value = float {{0}}> ()
    ge = {op}(z, c2)
    cb = Cast <to = 1> (ge)
    a = Mul(s, cb)
    b = Add(x, a)
    y = Softmax <axis = -1> (b)
}}
"""

# the same mask inside one subgraph: OpenVINO's own shape inference keeps the rank
RANK_KEPT = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,2,8,8] x, float[1,1,8,1] z) => (float[1,2,8,8] y) {
    c2 = Constant <value = float {0}> ()
    ge = GreaterOrEqual(z, c2)
    cb = Cast <to = 1> (ge)
    b = Add(x, cb)
    y = Softmax <axis = -1> (b)
}
"""


def _rank_findings(text: str) -> list[tuple[str, str]]:
    ctx = context(text, ["openvino"])
    ctx.analysis(Partitions)
    EpUnknownRankInput().check_model(ctx)
    return [(d.message_id, d.args["tensor"]) for d in ctx.diagnostics if d.code == "OL509"]


@pytest.mark.parametrize("op", ["GreaterOrEqual", "LessOrEqual"])
@pytest.mark.parametrize("opset", [12, 14, 15])
def test_rank_lost_after_comparison_is_a_failure(op: str, opset: int) -> None:
    assert _rank_findings(RANK_LOST.format(opset=opset, op=op)) == [("rank_lost", "cb")]


@pytest.mark.parametrize(
    "text", [RANK_LOST.format(opset=16, op="GreaterOrEqual"), RANK_KEPT], ids=["opset16", "one"]
)
def test_rank_kept_is_no_finding(text: str) -> None:
    assert _rank_findings(text) == []


# NonZero breaks OpenVINO's clusters; the lone Relu before it joins the cluster after it,
# and the path through NonZero leaves and re-enters that cluster (with "x": no way back)
CYCLE = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {{
    a = Relu(x)
    u = NonZero(a)
    b1 = Cast <to = 1> (u)
    b2 = ReduceSum <keepdims = 0> (b1)
    c = Add({src}, b2)
    y = Relu(c)
}}
"""


# ORT fuses the body's Relu/Sigmoid partition first; OpenVINO then compiles the Loop with
# that fused node in its body and fails, at every level (the If bodies of the corpus load)
LOOP = EpClaimedBodyPartition.example_bad


# an If that OpenVINO claims is compiled with its branches: one partition, none inside
IF_BRANCHES = """\
<ir_version: 8, opset_import: ["" : 16]>
g (float[1,4] x) => (float[1,4] y) {
    s = ReduceSum <keepdims = 0> (x)
    z = Constant <value = float {0}> ()
    c = Greater(s, z)
    o = If(c) <then_branch = t () => (float[1,4] a2) {
        a1 = Relu(x)
        a2 = Sigmoid(a1)
    }, else_branch = e () => (float[1,4] b2) {
        b1 = Tanh(x)
        b2 = Abs(b1)
    }>
    y = Relu(o)
}
"""


def test_if_branches_have_no_partition_of_their_own() -> None:
    plan = partitions(IF_BRANCHES, ["openvino"]).plan("exported")
    assert plan is not None
    got = [(p.graph, sorted(p.op_types)) for p in plan.partitions_on(OV)]
    assert got == [("main", ["Greater", "If", "Relu"])]  # the scalar ReduceSum stays on CPU
    assert {plan.node_ep[n] for n in plan.node_ep if ":then_branch" in n} == {OV}


def test_loop_with_a_body_partition_is_predicted_as_two_partitions() -> None:
    plan = partitions(LOOP, ["openvino"]).plan("exported")
    assert plan is not None
    got = {(p.graph.rsplit(":", 1)[-1], tuple(sorted(p.op_types))) for p in plan.partitions_on(OV)}
    assert got == {("main", ("Loop", "Relu", "Relu")), ("body", ("Identity", "Relu", "Sigmoid"))}


def _ov_partitions(text: str) -> list[list[str]]:
    plan = partitions(text, ["openvino"]).plan("exported")
    assert plan is not None
    return [
        sorted(n.rsplit("/", 1)[-1].split("_")[0] for n in p.nodes) for p in plan.partitions_on(OV)
    ]


def test_cut_follows_orts_order_highest_index_input_first() -> None:
    assert sorted(_ov_partitions(ORDER_CUT)) == [
        ["Abs", "Tanh"],
        ["Add", "Mul", "Relu", "Relu", "Sigmoid"],
    ]


def test_cluster_of_constants_stays_on_openvino() -> None:
    assert sorted(_ov_partitions(CONSTANT_CLUSTER)) == [["Add", "Mul", "Relu"], ["Add", "Relu"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [(LAST_SINGLE, [["Sigmoid"]]), (TWO_THEN_LAST_SINGLE, [["Neg", "Relu"], ["Sigmoid"]])],
)
def test_the_last_single_node_cluster_stays_on_openvino(
    text: str, expected: list[list[str]]
) -> None:
    assert sorted(_ov_partitions(text)) == expected


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_partitioning_on_real_openvino() -> None:
    models = {
        "order": onnx.parser.parse_model(ORDER_CUT),
        "constants": onnx.parser.parse_model(CONSTANT_CLUSTER),
        "if": onnx.parser.parse_model(IF_BRANCHES),
        "last_single": onnx.parser.parse_model(LAST_SINGLE),
        "two_then_last_single": onnx.parser.parse_model(TWO_THEN_LAST_SINGLE),
        "topk_in_chain": onnx.parser.parse_model(TOPK_IN_CHAIN),
    }
    check_real("openvino", str(openvino_runner()), models)


def _real_sessions(models: dict[str, str], level: str) -> dict[str, dict[str, object]]:
    """One real OpenVINO session per model at ``level``: ok, or the head of its error."""
    spec = agreement.EPS["openvino"]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for name, text in models.items():
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(onnx.parser.parse_model(text), path)
            jobs.append(
                {
                    "id": name,
                    "path": str(path),
                    "level": level,
                    "provider": spec["provider"],
                    "options": spec["options"],
                    "plugin": spec["plugin"],
                }
            )
        return agreement.run_real(jobs, str(openvino_runner()), timeout_s=300)


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_rank_lost_on_real_openvino() -> None:
    models = {
        "lost12": RANK_LOST.format(opset=12, op="LessOrEqual"),
        "lost15": RANK_LOST.format(opset=15, op="GreaterOrEqual"),
        "kept16": RANK_LOST.format(opset=16, op="GreaterOrEqual"),
        "one": RANK_KEPT,
    }
    real = _real_sessions(models, "disabled")
    for name in models:
        assert real[name].get("ok") is (not name.startswith("lost")), (name, real[name])
        if name.startswith("lost"):  # the worker keeps the head of the error only
            assert "openvino" in str(real[name]["error"]), real[name]


@pytest.mark.slow
@pytest.mark.ort_openvino
@pytest.mark.parametrize("level", ["disabled", "basic"])
def test_cyclic_partition_on_real_openvino(level: str) -> None:
    real = _real_sessions({"cycle": CYCLE.format(src="a"), "none": CYCLE.format(src="x")}, level)
    assert not real["cycle"].get("ok") and "acyclic" in str(real["cycle"]["error"]), real
    assert real["none"].get("ok"), real


@pytest.mark.slow
@pytest.mark.ort_openvino
@pytest.mark.parametrize("level", ["disabled", "basic"])
def test_loop_with_a_body_partition_on_real_openvino(level: str) -> None:
    real = _real_sessions({"loop": LOOP}, level)
    assert not real["loop"].get("ok") and "openvino" in str(real["loop"]["error"]), real


# TopK is supported by OpenVINO, yet never kept inside a cluster: the profile's
# partitioning.cluster_breakers cuts the chain around it (profile note, measured with
# onnxruntime-openvino 1.24.1). The refused scalar ConstantOfShape (see ORDER_CUT) keeps
# the graph from being claimed whole.
TOPK_IN_CHAIN = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,8] x) => (float[1,4] y, int64[1,4] i) {
    a = Relu(x)
    b = Sigmoid(a)
    k = Constant <value = int64[1] {4}> ()
    v, i = TopK(b, k)
    c = Relu(v)
    n = Neg(c)
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {0.5}> (e)
    y = Mul(n, s)
}
"""


def _plan_with(text: str, **partitioning: object) -> list[list[str]]:
    """OpenVINO's predicted partitions with some of its partitioning fields replaced."""
    ctx = context(text, ["openvino"])
    ctx.eps = [
        dataclasses.replace(p, partitioning=dataclasses.replace(p.partitioning, **partitioning))
        if p.ep == OV
        else p
        for p in ctx.eps
    ]
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    return sorted(sorted(n.split("_")[0] for n in p.op_types) for p in plan.partitions_on(OV))


def test_cluster_breakers_come_from_the_profile() -> None:
    assert sorted(_ov_partitions(TOPK_IN_CHAIN)) == [["Mul", "Neg", "Relu"], ["Relu", "Sigmoid"]]
    assert _plan_with(TOPK_IN_CHAIN, cluster_breakers=frozenset()) == [
        ["Mul", "Neg", "Relu", "Relu", "Sigmoid", "TopK"]
    ]


def test_grouping_comes_from_the_profile() -> None:
    # greedy grouping keeps every connected claimed node, breakers and all
    greedy = _plan_with(TOPK_IN_CHAIN, grouping="greedy")
    assert greedy != sorted(_ov_partitions(TOPK_IN_CHAIN))
    assert any("TopK" in p for p in greedy)

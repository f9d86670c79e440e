"""Partition prediction on hand-built graphs whose real ORT behaviour was measured.

Every QNN expectation below was first confirmed with real sessions on the QNN
HTP simulator (onnxruntime 1.31.1, onnxruntime-qnn 2.7.0, soc_model 60) via
``benchmarks/partition_agreement.py``; the slow test at the end re-checks
them against the real EP where it is installed. The CUDA expectations follow
ORT's GetCpuPreferredNodes rule (no CUDA device here to confirm them).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.bytecount import ByteCount
from onnxlint.analyses.partition import Partitions
from onnxlint.analyses.partition_units import greedy_groups, qdq_units
from onnxlint.ep_names import CPU_EP
from onnxlint.index import topological_order

from .conftest import check_real, context, partition_models, partitions

QNN = "QNNExecutionProvider"
OV = "OpenVINOExecutionProvider"
CUDA = "CUDAExecutionProvider"


def _labels(paths: list[str]) -> set[str]:
    return {p.split("/", 1)[1] for p in paths}


# (model, level, QNN partitions, nodes expected on CPU) -- measured on the QNN simulator
QNN_CASES = [
    ("alternating", "exported", 4, {"erf0", "erf1", "erf2"}),
    ("alternating", "optimized", 4, {"erf0", "erf1", "erf2"}),
    (
        "loop_fallback",
        "exported",
        1,
        {"loop", "post_relu", "loop:body/body_add", "loop:body/body_erf", "loop:body/body_cond"},
    ),
    ("encoder_static", "exported", 1, set()),
    ("encoder_static", "optimized", 1, set()),
    (
        "causal_mask",
        "exported",
        2,
        {"shape_x", "range", "unsq_row", "unsq_col", "less", "where", "add_mask"},
    ),
    ("causal_mask", "optimized", 1, set()),
]


def _model(name: str):
    return dict(partition_models.transformer_blocks())[name]


@pytest.mark.parametrize(("name", "level", "parts", "cpu"), QNN_CASES, ids=lambda v: str(v))
def test_qnn_prediction_matches_measurement(
    name: str, level: str, parts: int, cpu: set[str]
) -> None:
    plan = partitions(_model(name), ["qnn"]).plan(level)
    assert plan is not None
    assert len(plan.partitions_on(QNN)) == parts
    on_cpu = {p for p, ep in plan.node_ep.items() if ep == CPU_EP}
    assert _labels(sorted(on_cpu)) == cpu


def test_dynamic_encoder_leaves_qnn_only_the_shape_chain() -> None:
    """A symbolic batch/sequence makes QNN refuse every float node ('Cannot get shape')."""
    plan = partitions(_model("encoder_dynamic"), ["qnn"]).plan("exported")
    assert plan is not None
    on_qnn = _labels([p for p, ep in plan.node_ep.items() if ep == QNN])
    assert on_qnn == {"gather_b", "gather_s", "concat_split", "concat_merge"}


def test_assume_dim_moves_the_dynamic_encoder_onto_qnn() -> None:
    """With the dims fixed, the default session runs the whole encoder on QNN; with
    optimizations disabled the Reshapes to shapes computed from Shape -> Gather -> Concat
    stay unknown to ORT (it does not propagate shape values through Gather/Concat), so
    QNN refuses them and everything after them: 8 of 32 nodes on QNN (measured:
    onnxruntime-qnn 2.7.0 / QAIRT 2.51 HTP simulator soc_model=60, ORT 1.32.0)."""
    parts = partitions(_model("encoder_dynamic"), ["qnn"], assume_dims={"batch": 1, "sequence": 16})
    exported = parts.plan("exported")
    assert exported is not None
    on_qnn = _labels([p for p, ep in exported.node_ep.items() if ep == QNN])
    assert on_qnn == {
        "ln1", "q_proj", "k_proj", "v_proj", "gather_b", "gather_s", "concat_split",
        "concat_merge",
    }  # fmt: skip
    optimized = parts.plan("optimized")
    assert optimized is not None
    assert optimized.nodes_on(QNN) == len(optimized.node_ep)


def test_erf_gelu_is_fused_only_when_its_pattern_is_claimed() -> None:
    static = partitions(_model("encoder_static"), ["qnn"]).plan("exported")
    dynamic = partitions(_model("encoder_dynamic"), ["qnn"]).plan("exported")
    assert static is not None and dynamic is not None
    assert static.node_ep["main/gelu_erf"] == QNN
    assert dynamic.node_ep["main/gelu_erf"] == CPU_EP


def test_erf_gelu_fusion_comes_from_the_profile() -> None:
    ctx = context(_model("encoder_static"), ["qnn"])
    ctx.eps = [
        dataclasses.replace(p, fusions=p.fusions - {"erf_gelu"}) if p.ep == QNN else p
        for p in ctx.eps
    ]
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/gelu_erf"] == CPU_EP


#: the tails after Div(x, sqrt 2) -> Erf -> Add(., 1) as exporters write them, and
#: whether QNN HTP fuses the Erf into Gelu (measured: onnxruntime 1.32.0 +
#: onnxruntime-qnn 2.7.0, HTP simulator soc_model 60, both levels; the constants' values
#: did not matter there: 0.7 for the half was fused too)
GELU_TAILS = [
    ("half_first", "h = Mul(r, half)\n    y = Mul(h, a)", True),
    ("half_last", "m = Mul(r, a)\n    y = Mul(m, half)", True),
    ("dynamo", "m = Mul(half, a)\n    y = Mul(r, m)", True),
    ("no_half", "y = Mul(r, a)", False),
    ("other_operand", "m = Mul(half, a)\n    y = Mul(half, m)", False),
]


def _gelu_text(tail: str, head: str = "d = Div(r, sq)") -> str:
    return f"""\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8,16] x) => (float[1,8,16] y) {{
    sq = Constant <value = float {{1.4142135}}> ()
    rsq = Constant <value = float {{0.70710677}}> ()
    one = Constant <value = float {{1.0}}> ()
    half = Constant <value = float {{0.5}}> ()
    r = Relu(x)
    {head}
    e = Erf(d)
    a = Add(e, one)
    {tail}
}}
"""


#: the heads before Erf, and whether QNN HTP fuses the Erf into Gelu (measured as above):
#: TensorFlow's grappler, and so tf2onnx, writes the division by sqrt 2 as a Mul by its
#: reciprocal (the fourteenth held-out batch's Keras encoder)
GELU_HEADS = [
    ("mul_reciprocal", "d = Mul(r, rsq)", True),
    ("mul_reciprocal_first", "d = Mul(rsq, r)", False),
]

#: every form above as (name, model text, whether QNN HTP fuses it)
GELU_FORMS = [(name, _gelu_text(tail), fused) for name, tail, fused in GELU_TAILS] + [
    (name, _gelu_text(GELU_TAILS[0][1], head), fused) for name, head, fused in GELU_HEADS
]


@pytest.mark.parametrize(("name", "text", "fused"), GELU_FORMS, ids=[c[0] for c in GELU_FORMS])
def test_erf_gelu_forms_qnn_fuses(name: str, text: str, fused: bool) -> None:
    for level in ("exported", "optimized"):
        plan = partitions(text, ["qnn"]).plan(level)
        assert plan is not None
        erf = next(p for p in plan.node_ep if p.split("/", 1)[1].startswith("Erf"))
        assert plan.node_ep[erf] == (QNN if fused else CPU_EP), (name, level)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_erf_gelu_forms_on_the_real_qnn(qnn_available: None) -> None:
    models = {name: onnx.parser.parse_model(text) for name, text, _ in GELU_FORMS}
    check_real("qnn", sys.executable, models)


#: the ends of a "half last" Gelu pattern: float (a Relu) or quantized (a QuantizeLinear
#: -> DequantizeLinear pair), and whether QNN HTP fuses it: QNN validates the Gelu from
#: the tensor before a DequantizeLinear feeding it to the one after a QuantizeLinear reading
#: it, so a pattern quantized at one end only keeps its Erf on the CPU (a MatMul-only QDQ
#: BERT: float bias Add -> Gelu -> QuantizeLinear). Measured: onnxruntime 1.32.0 +
#: onnxruntime-qnn 2.7.0, HTP simulator soc_model 60, both levels.
GELU_ENDS = [
    ("float_float", False, False, True),
    ("float_quantized", False, True, False),
    ("quantized_float", True, False, False),
    ("quantized_quantized", True, True, True),
]


def _gelu_ends_model(q_in: bool, q_out: bool) -> onnx.ModelProto:
    consts = {"sq": 1.4142135, "one": 1.0, "half": 0.5, "s": 0.05}
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    inits.append(numpy_helper.from_array(np.array(128, np.uint8), "zp"))
    mk = helper.make_node
    if q_in:
        nodes = [mk("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_in")]
        nodes.append(mk("DequantizeLinear", ["xq", "s", "zp"], ["r"], "dq_in"))
    else:
        nodes = [mk("Relu", ["x"], ["r"], "pre")]
    nodes += [
        mk("Div", ["r", "sq"], ["d"], "div"),
        mk("Erf", ["d"], ["e"], "erf"),
        mk("Add", ["e", "one"], ["a"], "add"),
        mk("Mul", ["r", "a"], ["m"], "mul"),
        mk("Mul", ["m", "half"], ["g"], "mul_1"),
    ]
    if q_out:
        nodes.append(mk("QuantizeLinear", ["g", "s", "zp"], ["gq"], "q_out"))
        nodes.append(mk("DequantizeLinear", ["gq", "s", "zp"], ["gd"], "dq_out"))
        nodes.append(mk("Relu", ["gd"], ["y"], "post"))
    else:
        nodes.append(mk("Relu", ["g"], ["y"], "post"))
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "gelu_ends",
        [helper.make_tensor_value_info("x", f, [1, 8, 16])],
        [helper.make_tensor_value_info("y", f, [1, 8, 16])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(
    ("name", "q_in", "q_out", "fused"), GELU_ENDS, ids=[c[0] for c in GELU_ENDS]
)
def test_erf_gelu_is_fused_only_with_both_ends_alike(
    name: str, q_in: bool, q_out: bool, fused: bool
) -> None:
    model = _gelu_ends_model(q_in, q_out)
    for level in ("exported", "optimized"):
        plan = partitions(model, ["qnn"]).plan(level)
        assert plan is not None
        assert plan.node_ep["main/erf"] == (QNN if fused else CPU_EP), (name, level)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_erf_gelu_ends_on_the_real_qnn(qnn_available: None) -> None:
    models = {n: _gelu_ends_model(i, o) for n, i, o, _ in GELU_ENDS}
    check_real("qnn", sys.executable, models)


def test_qdq_units_group_dq_target_q() -> None:
    ctx = context(_model("qdq_conv"), ["qnn"])
    g = ctx.index.main
    units = qdq_units(g, g.nodes)
    assert [p.split("/")[1] for p in units["main/conv1"]] == ["dq_in", "dq_w1", "conv1", "q_c1"]
    assert [p.split("/")[1] for p in units["main/conv2"]] == ["dq_c1", "dq_w2", "conv2", "q_c2"]


def test_qnn_drops_a_lone_dequantize_partition() -> None:
    text = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y) {
    s = Constant <value = float {0.1}> ()
    zp = Constant <value = uint8 {128}> ()
    q = QuantizeLinear(x, s, zp)
    d = DequantizeLinear(q, s, zp)
    y = Erf(d)
}
"""
    plan = partitions(text, ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.nodes_on(QNN) == 0
    assert "single DequantizeLinear" in plan.released["main/DequantizeLinear_3"]


# greedy grouping: (edges as "a>b", supported nodes, expected groups)
GROUPING_CASES = [
    # a chain cut by an unsupported node in the middle: two groups
    (["a>b", "b>c"], {"a", "c"}, [["a"], ["c"]]),
    # an unsupported side branch that does not consume the group joins nothing; the group stays whole
    (["a>b", "a>c", "c>d"], {"a", "c", "d"}, [["a", "c", "d"]]),
    # a diamond whose one arm is unsupported: the join waits for the next wave
    (["a>b", "a>c", "b>d", "c>d"], {"a", "b", "d"}, [["a", "b"], ["d"]]),
    # independent supported nodes share a wave
    ([], {"a", "b"}, [["a", "b"]]),
]


@pytest.mark.parametrize(("edges", "supported", "expected"), GROUPING_CASES)
def test_greedy_groups(edges: list[str], supported: set[str], expected: list[list[str]]) -> None:
    names = sorted({x for e in edges for x in e.split(">")} | supported)
    producers = {}
    lines = []
    inputs = []
    for n in names:
        ins = [f"{e.split('>')[0]}_out" for e in edges if e.split(">")[1] == n]
        if not ins:
            ins = [f"in_{n}"]
            inputs.append(f"float[1] in_{n}")
        producers[n] = f"{n}_out"
        lines.append(f"    {n}_out = Sum({', '.join(ins)})")
    outs = ", ".join(
        f"float[1] {n}_out" for n in names if not any(e.startswith(n + ">") for e in edges)
    )
    text = (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        f"g ({', '.join(inputs)}) => ({outs}) {{\n" + "\n".join(lines) + "\n}\n"
    )
    ctx = context(text, [])
    g = ctx.index.main
    order = topological_order(g, g.nodes)
    by_label = {f"{n}": f"main/Sum_{i}" for i, n in enumerate(names)}
    groups = greedy_groups(g, order, {by_label[s] for s in supported})
    back = {v: k for k, v in by_label.items()}
    assert [sorted(back[p] for p in grp) for grp in groups] == expected


def test_cuda_moves_the_shape_chain_to_cpu_but_not_reshape() -> None:
    """GetCpuPreferredNodes: Shape's output is CPU memory; Gather/Unsqueeze/Concat follow it;
    Reshape reads its shape input from CPU by design and stays on CUDA."""
    text = """\
<ir_version: 10, opset_import: ["" : 23]>
g (float[N,16] x) => (float[N,16] y) {
    s = Shape(x)
    i = Constant <value = int64[1] {0}> ()
    b = Gather <axis = 0> (s, i)
    c = Constant <value = int64[1] {16}> ()
    shp = Concat <axis = 0> (b, c)
    r = Reshape(x, shp)
    y = Relu(r)
}
"""
    plan = partitions(text, ["cuda"]).plan("exported")
    assert plan is not None
    eps = {p.split("/")[1]: e for p, e in plan.node_ep.items()}
    assert eps == {
        "Shape_0": CUDA,
        "Gather_2": CPU_EP,
        "Concat_4": CPU_EP,
        "Reshape_5": CUDA,
        "Relu_6": CUDA,
    }
    assert "GetCpuPreferredNodes" in plan.released["main/Gather_2"]
    crossing = [c for c in plan.crossings if c.crosses_eps]
    assert {c.kind for c in crossing} == {"memcpy"}
    # the kernels' CPU memory is profile data (kernel_memory): without it nothing moves
    ctx = context(text, ["cuda"])
    ctx.eps = [
        dataclasses.replace(p, kernel_cpu_outputs={}) if p.ep == CUDA else p for p in ctx.eps
    ]
    bare = ctx.analysis(Partitions).plan("exported")
    assert bare is not None
    assert set(bare.node_ep.values()) == {CUDA}


def test_openvino_drops_single_node_clusters_and_breaks_at_nonzero() -> None:
    text = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (int64[2,?] y, float[1,16] z, double[1,16] w) {
    a = Relu(x)
    y = NonZero(a)
    z = Sigmoid(a)
    w = Cast <to = 11> (a)
}
"""
    plan = partitions(text, ["openvino"]).plan("exported")
    assert plan is not None
    # measured with onnxruntime-openvino 1.24.1: Relu + Sigmoid form one cluster, NonZero and
    # the float64 Cast stay on CPU
    assert plan.node_ep["main/NonZero_1"] == CPU_EP
    assert plan.node_ep["main/Cast_3"] == CPU_EP
    assert "NonZero" in plan.released["main/NonZero_1"]
    assert {plan.node_ep["main/Relu_0"], plan.node_ep["main/Sigmoid_2"]} == {OV}
    assert len(plan.partitions_on(OV)) == 1


def test_crossing_bytes_and_island() -> None:
    plan = partitions(_model("alternating"), ["qnn"]).plan("exported")
    assert plan is not None
    # 3 Erf islands, each with a [1,64] float in and out: 6 x 256 B
    assert len(plan.islands()) == 3
    assert plan.crossing_bytes().exact == 6 * 256
    line = plan.verdict_line(QNN)
    assert line.startswith("QNN: 4 partitions, 57% of nodes (4/7), 3 CPU islands, 1.5 KiB")
    assert "partition switches" in line


BYTE_CASES = [
    ("float", (2, 3), {}, 24, "24 B"),
    ("float16", ("batch", 8), {}, None, "16 B·batch"),
    ("float16", ("batch", 8), {"batch": 4}, 64, "64 B"),
    ("int4", (3,), {}, None, "1.5 B"),
    ("float", (1 << 62, 1 << 62, 1 << 62), {}, None, "≥ 16384.0 PiB"),
    ("string", (2,), {}, None, "1 tensor of unknown size"),
    ("float", None, {}, None, "1 tensor of unknown size"),
    # a dim an inferencer made up names nothing a user could pin: the size is unknown
    ("float", ("unk__3", 2), {}, None, "1 tensor of unknown size"),
]


@pytest.mark.parametrize(("dtype", "shape", "assume", "exact", "text"), BYTE_CASES)
def test_byte_counts(dtype, shape, assume, exact, text) -> None:
    b = ByteCount.of(dtype, shape, assume)
    if exact is not None:
        assert b.exact == exact
    assert b.describe() == text


def test_byte_sums_stay_bounded() -> None:
    huge = ByteCount.of("double", (1 << 62, 1 << 62), {})
    total = huge
    for _ in range(100):
        total = total + huge
    assert total.capped
    assert total.describe().startswith("≥")


def test_a_sum_of_many_dims_shows_its_largest_terms_and_counts_the_rest() -> None:
    counts = [ByteCount.of("float", (f"d{i}", 2 + i), {}) for i in range(10)]
    total = ByteCount.total([*counts, ByteCount.of("float", (3,), {})])
    text = total.describe()
    # the four largest symbolic terms, the static part, and how many are left out
    assert text == ("12 B + 32 B·d6 + 36 B·d7 + 40 B·d8 + 44 B·d9 + 6 more symbolic terms")
    # the JSON keeps every term as fields
    assert len(total.to_dict()["symbolic"]) == 10
    assert total.describe(max_terms=10).count("·") == 10


def test_loop_body_edges_carry_a_multiplier() -> None:
    plan = partitions(_model("loop_fallback"), ["cuda"]).plan("exported")
    assert plan is not None
    body = [c for c in plan.crossings if c.graph.startswith("main/loop:body")]
    assert body and all(c.repeat == "x4 per inference (inside a loop body)" for c in body)


def test_level1_graph_is_made_in_a_temp_dir_and_the_model_is_untouched(tmp_path) -> None:
    model = _model("causal_mask")
    before = model.SerializeToString()
    parts = partitions(model, ["qnn"])
    assert parts.plan("optimized") is not None
    assert parts.deployment_level == "optimized"
    assert model.SerializeToString() == before
    assert list(tmp_path.iterdir()) == []


def test_graph_level_setting_keeps_the_exported_graph() -> None:
    parts = partitions(_model("causal_mask"), ["qnn"], partition={"graph-level": "exported"})
    assert parts.deployment_level == "exported"
    assert [p.level for p in parts.plans()] == ["exported"]


def test_a_model_ort_cannot_load_is_predicted_on_the_exported_graph_with_a_note() -> None:
    text = """\
<ir_version: 8, opset_import: ["" : 17, "zz" : 1]>
g (float[1,16] x) => (float[1,16] y) {
    a = Relu(x)
    y = zz.Frobnicate(a)
}
"""
    parts = partitions(text, ["qnn"])
    plans = parts.plans()
    assert [p.level for p in plans] == ["exported"]
    assert parts.deployment_level == "exported"
    assert plans[0].note is not None and plans[0].note.startswith("no level-1 graph: ")


def test_function_op_without_a_kernel_is_expanded_as_ort_does() -> None:
    """ORT runs Mish (no CPU kernel) as its function body; QNN takes the body in one
    partition (measured: onnx node test test_mish, QNN HTP simulator)."""
    text = """\
<ir_version: 8, opset_import: ["" : 18]>
g (float[1,16] x) => (float[1,16] y) {
    y = Mish(x)
}
"""
    plan = partitions(text, ["qnn"]).plan("exported")
    assert plan is not None
    ops = sorted(p.op_types for p in plan.partitions_on(QNN))
    assert ops == [["Softplus", "Tanh", "Mul"]]
    # the expanded nodes point back at the Mish node of the user's model
    assert set(plan.graph.source_path.values()) == {"main/Mish_0"}

"""EP-support (OL5xx) and partition (OL6xx) rules: exact findings on small models, as a case table."""

from __future__ import annotations

import onnx
import pytest

import onnxlint
from onnxlint.diagnostics import Severity

HEAD = '<ir_version: 8, opset_import: ["" : 17]>\n'

# (id, model text, eps, config, expected {(code, node label or None, severity)}, codes that must not fire)
UNKNOWN_RANK_INPUT = (
    '<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>\n'
    "g (float[1,4] x) => (float[1,4] y) {\n t = custom.Mystery(x)\n a = Relu(t)\n"
    " y = Sigmoid(a)\n}\n"
)

# a mask computed by GreaterOrEqual in one OpenVINO subgraph and used in the next one (the
# refused scalar ConstantOfShape cuts OpenVINO's order between them)
RANK_LOST = (
    '<ir_version: 8, opset_import: ["" : {opset}]>\n'
    "g (float[1,2,8,8] x, float[1,1,8,1] z) => (float[1,2,8,8] y) {{\n"
    " e = Constant <value = int64[0] {{}}> ()\n"
    " s = ConstantOfShape <value = float[1] {{1}}> (e)\n"
    " c2 = Constant <value = float {{0}}> ()\n ge = GreaterOrEqual(z, c2)\n"
    " cb = Cast <to = 1> (ge)\n a = Mul(s, cb)\n b = Add(x, a)\n"
    " y = Softmax <axis = -1> (b)\n}}\n"
)

# NonZero breaks OpenVINO's clusters; the lone Relu before it joins the cluster after it
CYCLE = (
    HEAD + "g (float[1,8] x) => (float[1,8] y) {{\n a = Relu(x)\n u = NonZero(a)\n"
    " b1 = Cast <to = 1> (u)\n b2 = ReduceSum <keepdims = 0> (b1)\n c = Add({src}, b2)\n"
    " y = Relu(c)\n}}\n"
)

# OpenVINO claims the Loop and, before it, the Relu/Sigmoid partition of its body
LOOP = (
    '<ir_version: 8, opset_import: ["" : 16]>\n'
    "g (float[4] x) => (float[4] y) {{\n m = Constant <value = int64 {{3}}> ()\n"
    " t = Constant <value = bool {{1}}> ()\n r = Relu(x)\n"
    " lo = Loop(m, t, r) <body = body (int64 i, bool c, float[4] acc) => "
    "(bool c_out, float[4] acc_out) {{\n c_out = Identity(c)\n {body}\n }}>\n"
    " y = Relu(lo)\n}}\n"
)

CASES = [
    (
        "op-unsupported-falls-back-to-cpu",
        HEAD + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n y = Erf(a)\n}\n",
        ["qnn"],
        {},
        {("OL501", "Erf_1", Severity.WARNING)},
        {"OL504", "OL604"},
    ),
    (
        "dynamic-dims-refused-and-silent-cpu-run",
        HEAD + "g (float[N,16] x) => (float[N,16] y) {\n a = Relu(x)\n y = Relu(a)\n}\n",
        ["qnn"],
        {},
        {
            ("OL504", "Relu_0", Severity.WARNING),
            ("OL504", "Relu_1", Severity.WARNING),
            ("OL604", None, Severity.WARNING),
        },
        set(),
    ),
    (
        "assume-dim-fixes-the-dynamic-dims",
        HEAD + "g (float[N,16] x) => (float[N,16] y) {\n a = Relu(x)\n y = Relu(a)\n}\n",
        ["qnn"],
        {"assume-dims": {"N": 1}},
        set(),
        {"OL504", "OL604"},
    ),
    (
        "fallback-to-another-accelerator-is-info",
        HEAD + "g (float[1,16] x) => (float[1,16] y) {\n y = Erf(x)\n}\n",
        ["qnn", "openvino"],
        {"select": ["OL501"]},
        {("OL501", "Erf_0", Severity.INFO)},
        set(),
    ),
    (
        "island-between-two-qnn-partitions",
        HEAD
        + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n b = Erf(a)\n y = Relu(b)\n}\n",
        ["qnn"],
        {"select": ["OL6"]},
        {("OL602", "Erf_1", Severity.WARNING)},
        {"OL603"},
    ),
    (
        "island-max-nodes-option",
        HEAD + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n b = Erf(a)\n c = Erf(b)\n"
        " y = Relu(c)\n}\n",
        ["qnn"],
        {"select": ["OL6"], "partition": {"island-max-nodes": 1}},
        set(),
        {"OL602"},
    ),
    (
        "max-partitions-option",
        HEAD
        + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n b = Erf(a)\n y = Relu(b)\n}\n",
        ["qnn"],
        {"select": ["OL603"], "partition": {"max-partitions": 1}},
        {("OL603", None, Severity.WARNING)},
        set(),
    ),
    (
        "lone-dq-partition-dropped",
        HEAD + "g (float[1,16] x) => (float[1,16] y) {\n s = Constant <value = float {0.1}> ()\n"
        " zp = Constant <value = uint8 {128}> ()\n q = QuantizeLinear(x, s, zp)\n"
        " d = DequantizeLinear(q, s, zp)\n y = Erf(d)\n}\n",
        ["qnn"],
        {"select": ["OL601"]},
        {("OL601", "DequantizeLinear_3", Severity.WARNING)},
        set(),
    ),
    (
        "constant-only-partition-fails-on-qnn",
        HEAD
        + "g (float[1,4] x) => (float[1,4] y) {\n c = Constant <value = float[1,4] {1, 2, 3, 4}> ()\n"
        " r = Relu(c)\n e = Erf(r)\n y = Add(x, e)\n}\n",
        ["qnn"],
        {"select": ["OL507"]},
        {("OL507", "Relu_1", Severity.ERROR)},
        set(),
    ),
    (
        # the custom op runs on CPU; its output, of unknown rank, enters OpenVINO's partition
        "unknown-rank-input-fails-on-openvino",
        UNKNOWN_RANK_INPUT,
        ["openvino"],
        {"select": ["OL509"]},
        {("OL509", "Relu_1", Severity.ERROR)},
        set(),
    ),
    (
        "declared-rank-input-compiles-on-openvino",
        UNKNOWN_RANK_INPUT.replace(") {", ") <float[1,4] t> {", 1),
        ["openvino"],
        {"select": ["OL509"]},
        set(),
        {"OL509"},
    ),
    (
        "partition-left-and-re-entered-fails-on-openvino",
        CYCLE.format(src="a"),
        ["openvino"],
        {"select": ["OL510"]},
        {("OL510", "Add_4", Severity.ERROR)},
        set(),
    ),
    (
        "partition-without-a-way-back-compiles-on-openvino",
        CYCLE.format(src="x"),
        ["openvino"],
        {"select": ["OL510"]},
        set(),
        {"OL510"},
    ),
    (
        # QNN's partitions are closed under paths (ORT's CreateSupportedPartitions)
        "cyclic-partition-is-no-failure-on-qnn",
        CYCLE.format(src="a"),
        ["qnn"],
        {"select": ["OL510"]},
        set(),
        {"OL510"},
    ),
    (
        "loop-with-a-body-partition-fails-on-openvino",
        LOOP.format(body="a1 = Relu(acc)\n acc_out = Sigmoid(a1)"),
        ["openvino"],
        {"select": ["OL511"]},
        {("OL511", "Loop_3", Severity.ERROR)},
        set(),
    ),
    (
        # QNN does not claim the Loop: its body partition runs inside a CPU Loop
        "loop-with-a-body-partition-is-no-failure-on-qnn",
        LOOP.format(body="a1 = Relu(acc)\n acc_out = Sigmoid(a1)"),
        ["qnn"],
        {"select": ["OL511"]},
        set(),
        {"OL511"},
    ),
    (
        "greater-or-equal-15-output-loses-its-rank-between-openvino-subgraphs",
        RANK_LOST.format(opset=15),
        ["openvino"],
        {"select": ["OL509"]},
        {("OL509", "Mul_5", Severity.ERROR)},
        set(),
    ),
    (
        "greater-or-equal-16-output-keeps-its-rank",
        RANK_LOST.format(opset=16),
        ["openvino"],
        {"select": ["OL509"]},
        set(),
        {"OL509"},
    ),
    (
        # QNN's profile does not say such inputs fail: its nodes are refused, not failed
        "unknown-rank-input-is-no-failure-on-qnn",
        UNKNOWN_RANK_INPUT,
        ["qnn"],
        {"select": ["OL509"]},
        set(),
        {"OL509"},
    ),
    (
        "custom-op-nobody-runs",
        '<ir_version: 8, opset_import: ["" : 17, "my.vendor" : 1]>\n'
        "g (float[1,16] x) => (float[1,16] y) {\n y = my.vendor.FancyOp(x)\n}\n",
        ["qnn"],
        {"select": ["OL5"]},
        {("OL508", "FancyOp_0", Severity.ERROR)},
        {"OL501", "OL505"},
    ),
    (
        "second-accelerator-idle-is-not-a-silent-cpu-run",
        HEAD + "g (float[1,16] x) => (float[1,16] y) {\n y = Relu(x)\n}\n",
        ["openvino", "cuda"],
        {"select": ["OL604"]},
        set(),
        {"OL604"},
    ),
    (
        # ORT offers a node to the EPs in priority order until one takes it: an EP after
        # the claimer is never asked, so its refusal (QNN: Erf, dynamic dims) is no finding
        "refusals-after-the-claimer-never-happen",
        HEAD + "g (float[N,16] x) => (float[N,16] y) {\n a = Relu(x)\n y = Erf(a)\n}\n",
        ["openvino", "qnn"],
        {"select": ["OL5"]},
        set(),
        {"OL501", "OL504"},
    ),
    (
        "refusals-before-the-claimer-are-reported",
        HEAD + "g (float[N,16] x) => (float[N,16] y) {\n a = Relu(x)\n y = Erf(a)\n}\n",
        ["qnn", "openvino"],
        {"select": ["OL5"]},
        {
            ("OL501", "Erf_1", Severity.INFO),
            ("OL504", "Relu_0", Severity.INFO),
        },
        set(),
    ),
    (
        "no-accelerator-no-findings",
        HEAD + "g (float[N,16] x) => (float[N,16] y) {\n y = Erf(x)\n}\n",
        [],
        {"select": ["OL5", "OL6"]},
        set(),
        {"OL501", "OL504", "OL604"},
    ),
]


def _config(raw: dict) -> onnxlint.Config:  # type: ignore[name-defined]
    from onnxlint.config import from_mapping

    return from_mapping(raw)


@pytest.mark.parametrize(
    ("text", "eps", "config", "expected", "absent"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_findings(text: str, eps: list[str], config: dict, expected: set, absent: set) -> None:
    report = onnxlint.lint(onnx.parser.parse_model(text), eps=eps, config=_config(config))
    got = {
        (
            d.code,
            d.location.node_name or (d.location.node_path or "").split("/")[-1] or None,
            d.severity,
        )
        for d in report.diagnostics
        if d.code[:3] in ("OL5", "OL6")
    }
    assert expected <= got, onnxlint.render(report)
    assert not ({c for c, _, _ in got} & absent), onnxlint.render(report)


def test_messages_name_the_ep_the_node_and_a_fix() -> None:
    text = HEAD + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n y = Erf(a)\n}\n"
    report = onnxlint.lint(onnx.parser.parse_model(text), eps=["qnn"])
    d = next(d for d in report.diagnostics if d.code == "OL501")
    assert "QNN" in d.message and "Erf_1" in d.message and "falls back to CPU" in d.message
    assert d.ep == "qnn-htp"  # the engine names EPs by profile id
    assert d.fix is not None and d.fix.title
    assert d.graph_level == "exported"


def test_partition_findings_say_which_graph_they_describe() -> None:
    text = (
        HEAD
        + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n b = Erf(a)\n y = Relu(b)\n}\n"
    )
    report = onnxlint.lint(onnx.parser.parse_model(text), eps=["qnn"])
    island = next(d for d in report.diagnostics if d.code == "OL602")
    assert island.graph_level == "optimized"
    exported = onnxlint.lint(
        onnx.parser.parse_model(text),
        eps=["qnn"],
        config=_config({"partition": {"graph-level": "exported"}}),
    )
    assert next(d for d in exported.diagnostics if d.code == "OL602").graph_level == "exported"


def test_report_carries_partitions_and_assignment() -> None:
    text = (
        HEAD
        + "g (float[1,16] x) => (float[1,16] y) {\n a = Relu(x)\n b = Erf(a)\n y = Relu(b)\n}\n"
    )
    report = onnxlint.lint(onnx.parser.parse_model(text), eps=["qnn"])
    assert [p.level for p in report.partitions] == ["exported", "optimized"]
    assert report.assignment == {
        "main/Relu_0": "QNNExecutionProvider",
        "main/Erf_1": "CPUExecutionProvider",
        "main/Relu_2": "QNNExecutionProvider",
    }
    data = report.to_dict()["partitions"][1]
    assert data["verdicts"]["QNN"].startswith("QNN: 2 partitions, 67% of nodes (2/3), 1 CPU island")
    assert len(data["partitions"]) == 3

"""ORT's com.microsoft FastGelu, Gelu and QuickGelu carry a function body, and the CPU EP's
kernels for them are float's only: a float16 node that no EP in the list takes is inlined
after every EP has chosen, and the EPs choose again among its nodes
(``rules/ort_contrib_functions.json``, ``function_inlining._contrib_body``), whose groups
are partitions of their own. ORT's level-1 graph, from a CPU session, runs such a float16
region in float with its values renamed ``InsertedPrecisionFreeCast_<name>``; the names are
given back (``inserted_casts._restore_names``), so the body is folded back into the op and
judged again as at the exported level.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels: a float16 FastGelu between two Relus runs as three
QNN partitions (the Relus, and the nine nodes of the body); the same in float32 runs as the
CPU's FastGelu kernel, between two QNN partitions; QNN takes a float16 Gelu or QuickGelu
itself (one partition). On the CPU alone each float16 op runs as its body. The corpus's ORT-optimized float16 GPT-2
(two FastGelus) shows the same on QNN.
"""

from __future__ import annotations

import sys

import onnx
import pytest
from onnx import TensorProto, helper

import onnxlint
from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def between_relus(op: str, elem: int, bias: bool = False) -> onnx.ModelProto:
    """Relu -> com.microsoft ``op`` (``fn``; FastGelu with a bias input when ``bias``) ->
    Relu on a [1, 4, 8] tensor of element type ``elem``."""
    inputs = [helper.make_tensor_value_info("x", elem, [1, 4, 8])]
    args = ["r"]
    if bias:
        inputs.append(helper.make_tensor_value_info("bias", elem, [8]))
        args.append("bias")
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], "pre"),
            helper.make_node(op, args, ["g"], "fn", domain="com.microsoft"),
            helper.make_node("Relu", ["g"], ["y"], "post"),
        ],
        "contrib_fn",
        inputs,
        [helper.make_tensor_value_info("y", elem, [1, 4, 8])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


F16 = TensorProto.FLOAT16
#: name -> (model, the sizes of QNN's partitions, nodes ORT inlines when no EP takes the op)
CASES = {
    "fastgelu16": (between_relus("FastGelu", F16), [1, 1, 9], 9),
    "fastgelu16_bias": (between_relus("FastGelu", F16, bias=True), [1, 1, 9], 9),
    # QNN takes these two itself, so they are inlined only where no EP does
    "gelu16": (between_relus("Gelu", F16), [3], 5),
    "quickgelu16": (between_relus("QuickGelu", F16), [3], 3),
    # the CPU's float kernel runs it: it splits QNN's nodes in two
    "fastgelu32": (between_relus("FastGelu", TensorProto.FLOAT), [1, 1], 0),
}


@pytest.mark.parametrize("level", ["exported", "optimized"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unclaimed_float16_fastgelu_runs_on_qnn_as_its_body(name: str, level: str) -> None:
    model, sizes, inlined = CASES[name]
    plan = partitions(model, ["qnn"]).plan(level)
    assert plan is not None
    qnn = [p.nodes for p in plan.partitions if p.ep == QNN]
    assert sorted(len(p) for p in qnn) == sizes, qnn
    if name == "fastgelu32":
        assert plan.node_ep["main/fn"] == CPU_EP
    elif inlined and sizes != [3]:
        assert "main/fn" not in plan.node_ep
        assert ["main/pre"] in qnn and ["main/post"] in qnn
    else:
        assert plan.node_ep["main/fn"] == QNN


@pytest.mark.parametrize("name", sorted(CASES))
def test_with_no_ep_but_the_cpu_the_body_runs_on_the_cpu(name: str) -> None:
    model, _, inlined = CASES[name]
    plan = partitions(model, ["cpu"]).plan("exported")
    assert plan is not None
    body = [p for p in plan.node_ep if p.startswith('main/"fn/')]
    assert len(body) == inlined and ("main/fn" in plan.node_ep) == (not inlined)
    assert set(plan.node_ep.values()) == {CPU_EP}


def test_the_fallback_finding_is_not_reported_for_an_inlined_op() -> None:
    report = onnxlint.lint(CASES["fastgelu16"][0], eps=["qnn"])
    assert not [d for d in report.diagnostics if d.code in ("OL501", "OL508")], [
        (d.code, d.message) for d in report.diagnostics
    ]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_contrib_function_inlining_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {name: case[0] for name, case in CASES.items()})

"""QNN validates an If's branch nodes with the If: an If with a branch node QNN does not
take (an op it lacks, or one it refuses for an attribute) stays on the CPU, with its
branches ("If branch op `Sinh` is not supported by QNN EP."), and the nodes around it form
QNN partitions of their own. The profile says so with
``partitioning.refuses_unsupported_bodies`` (provenance ``qnn-if-branch-support``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"
CPU = "CPUExecutionProvider"


def relu_if_sigmoid(op: str, **attrs: Any) -> onnx.ModelProto:
    """Relu -> If whose two branches are one ``op`` node each on the Relu's output
    (captured) -> Sigmoid."""

    def branch(name: str) -> onnx.GraphProto:
        inputs = ["a", "a"] if op == "Mod" else ["a"]
        return helper.make_graph(
            [helper.make_node(op, inputs, [f"o_{name}"], f"{name}_op", **attrs)],
            name,
            [],
            [helper.make_tensor_value_info(f"o_{name}", TensorProto.FLOAT, [1, 8])],
        )

    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], "relu"),
            helper.make_node(
                "If",
                ["cond"],
                ["u"],
                "if",
                then_branch=branch("then"),
                else_branch=branch("else"),
            ),
            helper.make_node("Sigmoid", ["u"], ["y"], "sigmoid"),
        ],
        f"if_{op.lower()}",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        value_info=[helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: name -> (model, where the If runs, QNN partitions of the real sessions)
CASES = {
    "relu_branches": (relu_if_sigmoid("Relu"), QNN, 1),
    "sinh_branches": (relu_if_sigmoid("Sinh"), CPU, 2),
    "mod_fmod1_branches": (relu_if_sigmoid("Mod", fmod=1), CPU, 2),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_an_if_with_a_branch_qnn_refuses_stays_on_cpu(name: str, level: str) -> None:
    model, if_ep, count = CASES[name]
    plan = partitions(model, ["qnn"]).plan(level)
    assert plan is not None
    assert plan.node_ep["main/if"] == if_ep
    assert plan.node_ep["main/relu"] == plan.node_ep["main/sigmoid"] == QNN
    assert len(plan.partitions_on(QNN)) == count
    why = plan.released.get("main/if", "")
    if if_ep == CPU:
        assert "of its body" in why and "If branch op" in why
    else:
        assert not why


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_if_branches_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    from .conftest import agreement

    real = real_sessions("qnn", sys.executable, {n: m for n, (m, _, _) in CASES.items()})
    for name, (model, if_ep, count) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert r.get("ok"), r
            ran = {n["name"]: p["ep"] for p in r["partitions"] for n in p["nodes"]}
            assert ran["if"] == if_ep, (name, level, r)
            got = agreement.compare(agreement.predict(model, "qnn")[level], r, QNN)
            assert got["real_partitions"] == got["predicted_partitions"] == count, (name, got)

"""QNN computes a float64 tensor inside a partition as float32, but a float64 tensor that
enters or leaves a QNN partition fails session creation ("Unsupported FP64 data type in
graph IO" or "Failed to compose Qnn graph"): held-out SwiftF0 (a wheel model whose pitch
head runs in float64) failed on QNN with its samples dim fixed, unflagged. A float64
graph input or output is refused per node instead (the session loads; tested elsewhere).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) at both levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"
F, D = TensorProto.FLOAT, TensorProto.DOUBLE
N = helper.make_node


def _model(
    nodes: list[onnx.NodeProto],
    x_type: int = F,
    out_type: int = F,
    inits: tuple[onnx.TensorProto, ...] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "fp64",
        [helper.make_tensor_value_info("x", x_type, [1, 4])],
        [helper.make_tensor_value_info("out", out_type, [1, 4])],
        list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _to_double() -> list[onnx.NodeProto]:
    return [N("Relu", ["x"], ["r"], "relu"), N("Cast", ["r"], ["c"], "to_d", to=D)]


#: name -> (model, the node whose boundary tensor fails, or None: the session loads with
#: every node on QNN). ``Mod`` with ``fmod=1`` is a float64 node QNN refuses (the CPU runs it).
CASES: dict[str, tuple[onnx.ModelProto, str | None]] = {
    "inside": (
        _model([*_to_double(), N("Exp", ["c"], ["e"], "exp"), N("Cast", ["e"], ["out"], to=F)]),
        None,
    ),
    "inside_with_initializer": (
        _model(
            [*_to_double(), N("Add", ["c", "w"], ["e"], "add"), N("Cast", ["e"], ["out"], to=F)],
            inits=(numpy_helper.from_array(np.ones((1, 4)), "w"),),
        ),
        None,
    ),
    "leaves": (_model([*_to_double(), N("Mod", ["c", "c"], ["out"], fmod=1)], out_type=D), "to_d"),
    "enters": (
        _model(
            [
                N("Mod", ["x", "x"], ["a"], "mod", fmod=1),
                N("Sub", ["a", "a"], ["s"], "sub"),
                N("Cast", ["s"], ["f"], "to_f", to=F),
                N("Relu", ["f"], ["out"], "relu"),
            ],
            x_type=D,
        ),
        "sub",
    ),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_a_float64_partition_boundary_fails_the_session(case: str, level: str) -> None:
    model, failing = CASES[case]
    plan = partitions(model, ["qnn"]).plan(level)
    assert plan is not None
    if failing is None:
        assert set(plan.node_ep.values()) == {QNN}, plan.node_ep
        assert plan.finalize_failures == {}
    else:
        assert list(plan.finalize_failures) == [f"main/{failing}"], plan.finalize_failures
        assert "(double) at its boundary" in plan.finalize_failures[f"main/{failing}"]


@pytest.mark.parametrize("case", CASES)
def test_the_lint_reports_it_as_an_error_on_the_node(case: str) -> None:
    model, failing = CASES[case]
    found = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert [d.location.node_name for d in found] == ([failing] if failing else [])
    assert all(d.severity.name == "ERROR" for d in found)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_float64_boundaries_on_real_qnn(qnn_available: None) -> None:
    real = real_sessions("qnn", sys.executable, {k: m for k, (m, _) in CASES.items()})
    for name, (_, failing) in CASES.items():
        for level in ("disabled", "basic"):
            got = real[f"{name}|{level}"]
            if failing is None:
                assert got.get("ok"), got
                eps = {p["ep"] for p in got.get("partitions") or []}
                assert eps == {QNN}, got
            else:
                assert not got.get("ok"), got
                error = str(got.get("error"))
                assert (
                    "Unsupported FP64 data type in graph IO" in error
                    or "Failed to compose Qnn graph" in error
                ), got

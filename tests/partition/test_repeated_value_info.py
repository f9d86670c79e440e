"""A value declared more than once in ``value_info`` (held-out batch 19: isbnx 0.0.18's
detector declares each of its 510 values nine times, every copy with the exporter's
symbolic dims). ORT makes one NodeArg per name from the first declaration and merges its
inference into it, so with the input dims fixed every shape is static and QNN takes the
nodes. ONNX's inference merged its answer into one copy and left the others symbolic; the
session types read the first copy, saw dynamic dims and put every node on the CPU ("Cannot
get shape"), 309 of the detector's 493 nodes with its dims fixed.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), optimization levels disabled and basic, ``N`` fixed to 1 with
``add_free_dimension_override_by_name``.
"""

from __future__ import annotations

import sys

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.analyses.assignment import Assignment

from .conftest import context, real_sessions

NAMES = ("relu_a", "sigmoid_b", "relu_y")


def declared(copies: int) -> onnx.ModelProto:
    """Relu -> Sigmoid -> Relu over x [N, 8], the two inner values declared [N, 8]
    ``copies`` times each."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], NAMES[0]),
        helper.make_node("Sigmoid", ["a"], ["b"], NAMES[1]),
        helper.make_node("Relu", ["b"], ["y"], NAMES[2]),
    ]
    infos = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 8])
        for name in ("a", "b")
        for _ in range(copies)
    ]
    graph = helper.make_graph(
        nodes,
        "declared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
        value_info=infos,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


COPIES = (1, 2, 9)


@pytest.mark.parametrize("copies", COPIES)
def test_repeated_declarations_take_the_fixed_dims(copies: int) -> None:
    ctx = context(declared(copies), ["qnn"], assume_dims={"N": 1})
    la = ctx.analysis(Assignment).exported
    assert {na.node.name: na.first_claimer for na in la} == dict.fromkeys(
        NAMES, "QNNExecutionProvider"
    )


def test_without_fixed_dims_the_nodes_stay_on_the_cpu() -> None:
    la = context(declared(2), ["qnn"]).analysis(Assignment).exported
    assert {na.first_claimer for na in la} == {"CPUExecutionProvider"}


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.usefixtures("qnn_available")
def test_repeated_declarations_on_real_qnn() -> None:
    models = {f"copies{c}": declared(c) for c in COPIES}
    real = real_sessions(
        "qnn", sys.executable, models, free_dims={name: {"N": 1} for name in models}
    )
    for name in models:
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert r.get("ok"), r
            parts = [p for p in r["partitions"] if p["ep"] == "QNNExecutionProvider"]
            assert [sorted(n["name"] for n in p["nodes"]) for p in parts] == [sorted(NAMES)], r

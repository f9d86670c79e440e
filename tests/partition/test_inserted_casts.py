"""ORT's post-partitioning float16 Casts are not in the graph an EP partitions (the fifth
held-out batch: tf2onnx's float16 slovorez model, and the convert_float_to_float16
outputs of the third batch).

The level-1 graph is what a CPU-only session saved; after partitioning, that session
wrapped each float16 node the CPU EP has no kernel for in ``InsertedPrecisionFreeCast_``
Casts (``rules/ort_level1.json``, ``inserted_casts``). Kept, the Casts of a refused
Conv's float16 weights were a predicted QNN partition of constants; the real session
has no such partition and reports no Cast.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.inserted_casts import drop_inserted_casts

from .conftest import partitions, real_sessions


def fp16_conv(batch: int | str) -> onnx.ModelProto:
    """x float16 [batch, 4, 8, 8] -> Conv (float16 weights and bias) -> Relu."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.random((4, 4, 3, 3)).astype(np.float16), "w"),
        numpy_helper.from_array(rng.random(4).astype(np.float16), "b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "fp16_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [batch, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [batch, 4, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: name -> (batch, QNN partitions at the basic level, QNN nodes)
CASES = {"dynamic": ("N", 0, set()), "static": (1, 1, {"conv", "relu"})}


@pytest.mark.parametrize("name", list(CASES))
def test_inserted_casts_are_no_partition(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    batch, count, on_qnn = CASES[name]
    plan = partitions(fp16_conv(batch), ["qnn"]).plan("optimized")
    assert plan is not None
    assert len(plan.partitions_on("QNNExecutionProvider")) == count
    assert not any("InsertedPrecisionFreeCast" in p for p in plan.node_ep)
    taken = {p.split("/")[-1] for p, ep in plan.node_ep.items() if ep == "QNNExecutionProvider"}
    assert taken == on_qnn


def test_the_casts_come_out_with_their_tensors() -> None:
    """A Cast before a node and one back to a graph output, as ORT writes them."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["x32"], "InsertedPrecisionFreeCast_x", to=1),
            helper.make_node("Relu", ["x32"], ["y32"], "relu"),
            helper.make_node("Cast", ["y32"], ["y"], "InsertedPrecisionFreeCast_y", to=10),
            helper.make_node("Neg", ["y"], ["z"], "neg"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT16, [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got = drop_inserted_casts(model).graph
    assert [(n.name, list(n.input), list(n.output)) for n in got.node] == [
        ("relu", ["x"], ["y"]),
        ("neg", ["y"], ["z"]),
    ]
    assert len(model.graph.node) == 4  # the given model is left as it was


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.usefixtures("qnn_available")
def test_inserted_casts_on_real_qnn() -> None:
    models = {name: fp16_conv(batch) for name, (batch, _, _) in CASES.items()}
    real = real_sessions("qnn", sys.executable, models)
    for name, (_, count, on_qnn) in CASES.items():
        r = real[f"{name}|basic"]
        assert r.get("ok"), r
        parts = [p for p in r["partitions"] if p["ep"] == "QNNExecutionProvider"]
        assert len(parts) == count, r
        names = {n["name"] for p in r["partitions"] for n in p["nodes"]}
        assert not any(n.startswith("InsertedPrecisionFreeCast") for n in names), r
        # the static Conv is renamed by ORT's layout transform (conv_token_N, Transposes)
        assert ("relu" in {n["name"] for p in parts for n in p["nodes"]}) is bool(on_qnn), r

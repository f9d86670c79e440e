"""QNN HTP adds a Conv's float weight initializer in its own layout; it then fails to add
any other node that reads the same initializer ("Failed to add node."), which stays on the
CPU, whichever of the two comes first (issue #16, eleventh held-out batch: timm's RegNetX
zero-initializes its last BatchNorm, so the folded conv3 weights are equal and the
TorchScript exporter writes one initializer, read by one Conv directly and by the others
through Identity nodes; those Identities ran on the CPU at ``qnn-fixed/disabled``). Two
Convs reading one weight, an Identity of a bias and an Identity of a weight no Conv reads
directly all run on QNN.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), level disabled; the profile's
``integer_tensor_registration.layout_weight_ops``.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"


def convs(second: str, reader_first: bool = False) -> onnx.ModelProto:
    """x [1, 8, 4, 4] -> Conv A (weight W, bias B) -> Conv B; ``second``: Conv B reads W
    through an Identity ("weight"), B through an Identity ("bias"), W directly ("shared"),
    or a Mul(W, W) beside the Convs ("mul")."""
    w_b, b_b = {"weight": ("w2", "B"), "bias": ("W", "b2")}.get(second, ("W", "B"))
    reader = {
        "weight": helper.make_node("Identity", ["W"], ["w2"], "reader"),
        "bias": helper.make_node("Identity", ["B"], ["b2"], "reader"),
        "mul": helper.make_node("Mul", ["W", "W"], ["ww"], "reader"),
    }.get(second)
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["a"], "conv_a"),
        helper.make_node("Conv", ["a", w_b, b_b], ["b"], "conv_b"),
    ]
    if reader is not None:
        nodes.insert(0 if reader_first else 1, reader)
    outputs = [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 8, 4, 4])]
    if second == "mul":
        outputs.append(helper.make_tensor_value_info("ww", TensorProto.FLOAT, [8, 8, 1, 1]))
    graph = helper.make_graph(
        nodes,
        f"convs_{second}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        outputs,
        [
            numpy_helper.from_array(np.full((8, 8, 1, 1), 0.1, np.float32), "W"),
            numpy_helper.from_array(np.zeros(8, np.float32), "B"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: name -> (model, the reader's EP at the disabled level; None: no reader)
CASES: dict[str, tuple[onnx.ModelProto, str | None]] = {
    "identity_of_weight": (convs("weight"), CPU_EP),
    "identity_of_weight_first": (convs("weight", reader_first=True), CPU_EP),
    "mul_of_weight": (convs("mul"), CPU_EP),
    "identity_of_bias": (convs("bias"), QNN),
    "shared_weight": (convs("shared"), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_conv_weight_read_by_another_node(name: str) -> None:
    model, reader = CASES[name]
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    assert (plan.node_ep["main/conv_a"], plan.node_ep["main/conv_b"]) == (QNN, QNN)
    assert plan.node_ep.get("main/reader") == reader


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_conv_weight_reader_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {n: c[0] for n, c in CASES.items()})
    for name, (_, reader) in CASES.items():
        r = real[f"{name}|disabled"]
        assert r.get("ok"), (name, r)
        placed = {n["name"]: p["ep"] for p in r["partitions"] for n in p["nodes"]}
        assert placed.get("reader") == reader, (name, placed)
        # ORT's layout transform renames the Convs it rewrites to NHWC: all on QNN
        assert all(ep == QNN for n, ep in placed.items() if n.startswith("conv")), placed

"""ORT gives every input a DequantizeLinear feeds its own copy of that DQ before any EP
sees the graph (``EnsureUniqueDQForNodeUnit``, at every optimization level), so a DQ
shared by several readers belongs to the QDQ unit of each of them
(``partition_units.qdq_units``).

The case that made it matter: the corpus's 16-bit-activation MobileNetV2 shares one
uint16 zero-bias DequantizeLinear between several Convs. With its copy, each Conv's
bias is a non-int32 DQ, so no Conv unit forms, and QNN takes each weight DequantizeLinear
on its own even where it refuses the Conv (dynamic shapes). Counted without the copies,
the units formed without the bias and the weights went to the CPU with their Convs.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
NP = {"int32": np.int32, "uint8": np.uint8}


def shared_bias_convs(bias: str, batch: int | str, graph_output: bool = False) -> onnx.ModelProto:
    """Two QDQ Convs (uint8 activations and weights) that read one bias DequantizeLinear
    ``dq_b`` of ``bias`` constants; ``batch`` a number or a dim name (then QNN refuses the
    Convs: it needs static shapes); ``graph_output``: ``dq_b`` also writes a graph output.
    A Relu of a second, static input gives QNN's partition a graph input (one of
    constants only fails: "zero graph inputs")."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(128, np.uint8), "wzp"),
        numpy_helper.from_array(np.arange(4).astype(NP[bias]), "bq"),
        numpy_helper.from_array(np.array(0.0005, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, NP[bias]), "bzp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["bq", "bs", "bzp"], ["bf"], "dq_b"),
    ]
    cur = "xd"
    for k in range(2):
        w = rng.integers(0, 255, (4, 4, 3, 3)).astype(np.uint8)
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        nodes += [
            helper.make_node("DequantizeLinear", [f"w{k}", "ws", "wzp"], [f"wf{k}"], f"dq_w{k}"),
            helper.make_node("Conv", [cur, f"wf{k}", "bf"], [f"c{k}"], f"conv{k}", pads=[1] * 4),
            helper.make_node("QuantizeLinear", [f"c{k}", "s", "zp"], [f"cq{k}"], f"q_c{k}"),
            helper.make_node("DequantizeLinear", [f"cq{k}", "s", "zp"], [f"cd{k}"], f"dq_c{k}"),
        ]
        cur = f"cd{k}"
    nodes.append(helper.make_node("Relu", [cur], ["y"], "relu_out"))
    nodes.append(helper.make_node("Relu", ["z"], ["rz"], "relu_z"))
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8]),
        helper.make_tensor_value_info("rz", TensorProto.FLOAT, [1, 4]),
    ]
    if graph_output:
        outputs.append(helper.make_tensor_value_info("bf", TensorProto.FLOAT, [4]))
    graph = helper.make_graph(
        nodes,
        f"shared_{bias}_bias",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, 8, 8]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4]),
        ],
        outputs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_weights_of_refused_convs_run_alone_when_the_shared_bias_is_not_int32() -> None:
    plan = partitions(shared_bias_convs("uint8", "N"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/conv0"] == plan.node_ep["main/conv1"] == CPU_EP
    # each Conv's copy of dq_b is uint8: no Conv unit forms, so QNN takes the weights alone
    assert plan.node_ep["main/dq_w0"] == plan.node_ep["main/dq_w1"] == QNN


def test_weights_go_with_refused_convs_when_the_shared_bias_is_int32() -> None:
    plan = partitions(shared_bias_convs("int32", "N"), ["qnn"]).plan("exported")
    assert plan is not None
    # the units form (with each Conv's own copy of dq_b) and stay whole on the CPU
    for p in ("conv0", "conv1", "dq_w0", "dq_w1", "dq_b"):
        assert plan.node_ep[f"main/{p}"] == CPU_EP, p


def test_the_first_reader_keeps_a_shared_int32_bias_in_its_unit() -> None:
    plan = partitions(shared_bias_convs("int32", 1), ["qnn"]).plan("exported")
    assert plan is not None
    # not a lone int32 DQ (which HTP refuses): the bias of conv0's unit
    assert plan.node_ep["main/dq_b"] == QNN
    assert "main/dq_b" not in plan.released


def test_a_shared_dq_that_writes_a_graph_output_is_in_no_unit() -> None:
    plan = partitions(shared_bias_convs("int32", 1, graph_output=True), ["qnn"]).plan("exported")
    assert plan is not None
    # every reader gets a copy, so the Convs' units form; the original is in none (QNN
    # refuses a DQ that writes a graph output)
    assert plan.node_ep["main/dq_b"] == CPU_EP
    assert plan.node_ep["main/conv0"] == plan.node_ep["main/conv1"] == QNN


CASES = {
    "uint8_dynamic": shared_bias_convs("uint8", "N"),
    "int32_dynamic": shared_bias_convs("int32", "N"),
    "int32_static": shared_bias_convs("int32", 1),
    "uint8_static": shared_bias_convs("uint8", 1),
    "int32_static_output": shared_bias_convs("int32", 1, graph_output=True),
}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_shared_dequantize_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, CASES)
